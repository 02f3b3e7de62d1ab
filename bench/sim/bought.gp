# Node-hours bought over the cloud sweep: gnuplot -e "dir='bench/results/sweep-cloud'" bench/sim/bought.gp
# Reads dir/bought.dat (bench/sim/cloud_report.py); writes dir/bought.png: one stacked bar per policy,
# the node-hours its nodes held workers, stood idle, and were being provisioned, summed over the slices.
set terminal pngcairo size 800,450 font ",11"
set output dir.'/bought.png'
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border -1
set boxwidth 0.6
set grid ytics
set key outside right
set title 'Node-hours bought over the cloud sweep, by what the nodes did'
set ylabel 'node-hours'
set yrange [0:*]
plot dir.'/bought.dat' using 2:xtic(1) title 'holding workers' lc rgb '#2e86c1', \
     '' using 3 title 'idle' lc rgb '#c0392b', \
     '' using 4 title 'provisioning' lc rgb '#f5b041'
