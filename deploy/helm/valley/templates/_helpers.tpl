{{/* The prefix of every object's name: the release name if it says "valley", else <release>-valley. */}}
{{- define "valley.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "valley.selectorLabels" -}}
app.kubernetes.io/name: valley
app.kubernetes.io/component: operator
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "valley.labels" -}}
{{ include "valley.selectorLabels" . }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/*
A manifest shipped under deploy/ (one source for kustomize and Helm), moved into the release: its
namespace becomes the release namespace and "valley-" names the release's prefix.
*/}}
{{- define "valley.shipped" -}}
{{- $root := index . 0 -}}
{{- $text := $root.Files.Get (index . 1) -}}
{{- $text = $text | replace "namespace: valley-system" (printf "namespace: %s" $root.Release.Namespace) -}}
{{- $text = $text | replace "name: valley-" (printf "name: %s-" (include "valley.fullname" $root)) -}}
{{- $text = $text | replace "policyName: valley-" (printf "policyName: %s-" (include "valley.fullname" $root)) -}}
{{- $text -}}
{{- end -}}
