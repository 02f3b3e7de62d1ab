#!/usr/bin/env python3
"""Builds a container image without a container engine, for the real node (tests/cluster/node.sh).

    build_image.py dockerfile DOCKERFILE --tag TAG --build-dir BUILD --repo REPO --cache DIR
    build_image.py pause PAUSE_BINARY --tag TAG --cache DIR

`dockerfile` follows the final stage of one of the project's Dockerfiles, so the image a user
builds with Docker and the one the tests run come from one recipe:
  FROM debian:<suite>[-slim]   a debootstrap --variant=minbase root of that suite (cached)
  RUN ...                      run in a chroot of the root (apt-get reaches Debian's archive)
  COPY --from=build /src/build/bin/X DEST   X from BUILD/bin, stripped (the host built it on the
                               same Debian release with the same packages the build stage installs)
  COPY SRC DEST                SRC from the repository
  ENV, USER, WORKDIR, ENTRYPOINT, CMD   the image's config; EXPOSE and comments are ignored.
Anything else is an error. `pause` packs one static binary as the pod sandbox image.

The output is a docker-archive tarball (what `ctr images import` reads), written to
DIR/<tag>-<key>.tar where the key hashes every input (recipe, copied files, base root); a second
run with the same inputs builds nothing. Prints the tarball's path.
"""
import argparse
import hashlib
import io
import json
import os
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile

MIRROR = "http://deb.debian.org/debian"
EPOCH = 0  # every file's mtime in the layer: the same inputs give the same bytes


def fail(msg):
    print(f"build_image: {msg}", file=sys.stderr)
    sys.exit(1)


def parse_final_stage(path):
    """Instructions of the Dockerfile's last stage as (KEYWORD, rest) with continuations joined."""
    lines, cur = [], ""
    with open(path) as f:
        for raw in f:
            line = raw.rstrip("\n")
            if line.lstrip().startswith("#"):  # Docker drops comment lines, inside a continued RUN too
                continue
            if line.endswith("\\"):
                cur += line[:-1] + " "
                continue
            cur += line
            if cur.strip():
                lines.append(cur.strip())
            cur = ""
    stages, stage = [], None
    for line in lines:
        word, _, rest = line.partition(" ")
        word = word.upper()
        if word == "FROM":
            stage = [(word, rest.strip())]
            stages.append(stage)
        elif stage is None:
            fail(f"{path}: {word} before FROM")
        else:
            stage.append((word, rest.strip()))
    if not stages:
        fail(f"{path}: no FROM")
    return stages[-1]


def quiet(argv, env=None):
    """Runs argv; its output (package managers say a lot) is shown only if it fails."""
    r = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        print(r.stdout[-6000:], file=sys.stderr)
        fail(f"{' '.join(argv[:4])}... exited with {r.returncode}")


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def base_root(suite, cache):
    """A minbase root of `suite`, made once and kept as a tarball in the cache."""
    tarball = os.path.join(cache, f"debian-{suite}-minbase.tar")
    if os.path.exists(tarball):
        return tarball
    tmp = tempfile.mkdtemp(prefix="valley-debootstrap-", dir=cache)
    try:
        print(f"build_image: debootstrap {suite} (first time only)", file=sys.stderr)
        quiet(["debootstrap", "--variant=minbase", suite, tmp, MIRROR])
        subprocess.run(["tar", "--numeric-owner", "-C", tmp, "-cf", tarball + ".tmp", "."], check=True)
        os.replace(tarball + ".tmp", tarball)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return tarball


def json_or_shell(rest):
    """ENTRYPOINT/CMD: the JSON form as given, the shell form as sh -c."""
    rest = rest.strip()
    if rest.startswith("["):
        return json.loads(rest)
    return ["/bin/sh", "-c", rest]


def env_pairs(rest):
    out = []
    for word in shlex.split(rest):
        if "=" not in word:
            fail(f"ENV {rest}: only the KEY=VALUE form is supported")
        out.append(word)
    return out


def chroot_run(root, command):
    """A RUN line in the root, with the host's resolver so apt-get reaches Debian's archive."""
    shutil.copy("/etc/resolv.conf", os.path.join(root, "etc/resolv.conf"))
    os.makedirs(os.path.join(root, "proc"), exist_ok=True)
    # As in Debian's container images: package scripts must not start services inside the build.
    policy = os.path.join(root, "usr/sbin/policy-rc.d")
    with open(policy, "w") as f:
        f.write("#!/bin/sh\nexit 101\n")
    os.chmod(policy, 0o755)
    subprocess.run(["mount", "-t", "proc", "proc", os.path.join(root, "proc")], check=True)
    try:
        env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
               "DEBIAN_FRONTEND": "noninteractive", "HOME": "/root", "LANG": "C.UTF-8"}
        quiet(["chroot", root, "/bin/sh", "-c", command], env=env)
    finally:
        subprocess.run(["umount", os.path.join(root, "proc")], check=True)
        open(os.path.join(root, "etc/resolv.conf"), "w").close()
        os.remove(policy)


def copy_into(root, src, dest, strip):
    target = os.path.join(root, dest.lstrip("/"))
    if dest.endswith("/"):
        target = os.path.join(target, os.path.basename(src))
    os.makedirs(os.path.dirname(target), exist_ok=True)
    shutil.copy2(src, target)
    os.chmod(target, 0o755 if os.access(src, os.X_OK) else 0o644)
    if strip:
        subprocess.run(["strip", target], check=True)


def layer_tar(root, out):
    """The root as one layer: sorted names, fixed mtimes, numeric owners; /dev, /proc, /sys empty
    (the runtime mounts them), no apt caches or documentation."""
    subprocess.run(["tar", "--sort=name", f"--mtime=@{EPOCH}", "--numeric-owner", "--xattrs",
                    "--exclude=./dev/*", "--exclude=./proc/*", "--exclude=./sys/*",
                    "--exclude=./var/cache/apt/*", "--exclude=./var/lib/apt/lists/*",
                    "--exclude=./usr/share/doc/*", "--exclude=./usr/share/man/*",
                    "--exclude=./usr/share/locale/*", "--exclude=./var/log/*",
                    "-C", root, "-cf", out, "."], check=True)


def docker_archive(layer, config, tag, out):
    """docker-archive format: manifest.json, the config blob and the layer, as ctr imports them."""
    layer_digest = sha256_file(layer)
    config["rootfs"] = {"type": "layers", "diff_ids": [f"sha256:{layer_digest}"]}
    config.setdefault("architecture", "amd64")
    config.setdefault("os", "linux")
    blob = json.dumps(config, sort_keys=True).encode()
    config_name = hashlib.sha256(blob).hexdigest() + ".json"
    manifest = json.dumps([{"Config": config_name, "RepoTags": [tag],
                            "Layers": [f"{layer_digest}/layer.tar"]}]).encode()
    with tarfile.open(out + ".tmp", "w", format=tarfile.PAX_FORMAT) as t:
        def add_bytes(name, data):
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), EPOCH, 0o644
            t.addfile(info, io.BytesIO(data))
        add_bytes("manifest.json", manifest)
        add_bytes(config_name, blob)
        info = t.gettarinfo(layer, arcname=f"{layer_digest}/layer.tar")
        info.mtime, info.uid, info.gid, info.uname, info.gname = EPOCH, 0, 0, "", ""
        with open(layer, "rb") as f:
            t.addfile(info, f)
    os.replace(out + ".tmp", out)


def cached_path(cache, tag, key):
    safe = tag.replace("/", "_").replace(":", "_")
    return os.path.join(cache, f"{safe}-{key[:12]}.tar")


def build_from_dockerfile(args):
    stage = parse_final_stage(args.source)
    word, image = stage[0]
    if not image.startswith("debian:"):
        fail(f"FROM {image}: only debian:<suite>[-slim] images are built here")
    suite = image.split(":", 1)[1].split(" ")[0].removesuffix("-slim")
    base = base_root(suite, args.cache)

    # The key: the recipe, the base root, and every file the recipe copies.
    h = hashlib.sha256()
    h.update(open(__file__, "rb").read())
    h.update(json.dumps(stage).encode())
    st = os.stat(base)  # the base is made once per cache; a new one is another input
    h.update(f"{st.st_size}:{st.st_mtime_ns}".encode())
    copies = []
    for word, rest in stage[1:]:
        if word != "COPY":
            continue
        parts = shlex.split(rest)
        from_build = parts[0] == "--from=build"
        if from_build:
            parts = parts[1:]
        if len(parts) < 2 or any(p.startswith("--") for p in parts) or (len(parts) > 2 and not parts[-1].endswith("/")):
            fail(f"COPY {rest}: sources and a destination (a directory for several), and --from=build, are supported")
        group = []
        for src in parts[:-1]:
            if from_build:
                prefix = "/src/build/bin/"
                if not src.startswith(prefix):
                    fail(f"COPY --from=build {src}: only {prefix}* is taken from the host build")
                path = os.path.join(args.build_dir, "bin", src[len(prefix):])
            else:
                path = os.path.join(args.repo, src)
            if not os.path.isfile(path):
                fail(f"COPY {src}: {path} not found (build it first)")
            group.append((path, parts[-1], from_build))
            h.update(sha256_file(path).encode())
        copies.append(group)
    def fill(root):
        subprocess.run(["tar", "--numeric-owner", "-C", root, "-xf", base], check=True)
        config = {"config": {"Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]}}
        c = config["config"]
        copy_iter = iter(copies)
        for word, rest in stage[1:]:
            if word == "RUN":
                chroot_run(root, rest)
            elif word == "COPY":
                for path, dest, from_build in next(copy_iter):
                    copy_into(root, path, dest, strip=from_build)
            elif word == "ENV":
                for pair in env_pairs(rest):
                    key = pair.split("=", 1)[0]
                    c["Env"] = [e for e in c["Env"] if not e.startswith(key + "=")] + [pair]
            elif word == "USER":
                c["User"] = rest
            elif word == "WORKDIR":
                c["WorkingDir"] = rest
            elif word == "ENTRYPOINT":
                c["Entrypoint"] = json_or_shell(rest)
            elif word == "CMD":
                c["Cmd"] = json_or_shell(rest)
            elif word in ("EXPOSE", "LABEL"):
                pass
            else:
                fail(f"{word} {rest}: not supported by this builder")
        return config

    build_cached(args, h, fill)


def build_cached(args, key_hash, fill):
    """The image keyed by key_hash, built by fill(root) -> config unless the cache has it."""
    out = cached_path(args.cache, args.tag, key_hash.hexdigest())
    if not os.path.exists(out):
        print(f"build_image: building {args.tag} (first time only)", file=sys.stderr)
        work = tempfile.mkdtemp(prefix="valley-image-", dir=args.cache)
        try:
            root = os.path.join(work, "root")
            os.makedirs(root)
            config = fill(root)
            layer = os.path.join(work, "layer.tar")
            layer_tar(root, layer)
            docker_archive(layer, config, args.tag, out)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    print(out)


def build_pause(args):
    h = hashlib.sha256(open(__file__, "rb").read())
    h.update(sha256_file(args.source).encode())

    def fill(root):
        copy_into(root, args.source, "/pause", strip=True)
        return {"config": {"Entrypoint": ["/pause"], "User": "65535:65535"}}

    build_cached(args, h, fill)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("kind", choices=["dockerfile", "pause"])
    p.add_argument("source")
    p.add_argument("--tag", required=True)
    p.add_argument("--cache", required=True)
    p.add_argument("--build-dir", default="build")
    p.add_argument("--repo", default=".")
    args = p.parse_args()
    os.makedirs(args.cache, exist_ok=True)
    (build_pause if args.kind == "pause" else build_from_dockerfile)(args)


if __name__ == "__main__":
    main()
