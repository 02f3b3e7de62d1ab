# Plots of a valley-sim run: gnuplot -e "dir='bench/results/sim'" bench/sim/plot.gp
# Reads dir/policies.dat and dir/allocation.dat; writes dir/cost.png, dir/jct.png, dir/allocation.png.
set terminal pngcairo size 900,500 font ",11"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set grid ytics
set key top left

set output dir.'/cost.png'
set title 'Total cost per policy (bars) against the LP lower bound (line)'
set ylabel 'cost'
set yrange [0:*]
plot dir.'/policies.dat' using 2:xtic(1) title 'total cost' lc rgb '#4a7ab5', \
     '' using 0:8 with linespoints lw 2 lc rgb '#c0392b' title 'lower bound'

set output dir.'/jct.png'
set key top right
set title 'Job completion time per policy'
set ylabel 'hours'
plot dir.'/policies.dat' using 4:xtic(1) title 'mean JCT' lc rgb '#4a7ab5', \
     '' using 5 title 'p50 JCT' lc rgb '#7fb3d5', \
     '' using 7 title 'mean queueing' lc rgb '#f5b041'

set output dir.'/allocation.png'
set style data lines
set title 'GPU allocation over time (share of live GPUs held by jobs)'
set xlabel 'hour of the replay'
set ylabel 'percent'
set yrange [0:100]
set key top right
plot for [i=2:4] dir.'/allocation.dat' using 1:i with lines lw 2 title columnhead(i)
