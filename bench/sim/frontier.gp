# The cost-time frontier: gnuplot -e "dir='bench/results/frontier'" bench/sim/frontier.gp
# Reads dir/frontier.dat (bench/sim/frontier_report.py); writes dir/frontier.png: one point per policy
# and setting, cost summed over the slices against the median slice's mean JCT of tasks without
# reduceCost, both relative to backfill (which sits at 1,1). Below-left of it: cheaper and no slower.
set terminal pngcairo size 900,600 font ",11"
set output dir.'/frontier.png'
set grid
set key off
set title 'Cost against time for tasks without reduceCost (sweep of 33 slices, relative to backfill)'
set xlabel 'mean JCT of tasks without reduceCost / backfill''s (median slice)'
set ylabel 'cost / backfill''s (summed over the slices)'
set arrow from 1, graph 0 to 1, graph 1 nohead dt 2 lc rgb '#888888'
set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2 lc rgb '#888888'
plot dir.'/frontier.dat' using 4:3 with points pt 7 ps 1.5 lc rgb '#2e86c1', \
     '' using 4:3:(stringcolumn(1) eq 'valley' ? stringcolumn(2) : stringcolumn(1)) with labels offset 1,0.8 left font ',9'
