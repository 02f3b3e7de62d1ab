# Where the money goes over the sweep: gnuplot -e "dir='bench/results/sweep'" bench/sim/money.gp
# Reads dir/money.dat (bench/sim/sweep_report.py); writes dir/money.png: one stacked bar per policy,
# each part a share of backfill's total cost, and the LP bounds' sum as a line.
set terminal pngcairo size 900,500 font ",11"
set output dir.'/money.png'
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border -1
set boxwidth 0.6
set grid ytics
set key outside right
set title 'Where the money goes, summed over the sweep (share of backfill''s total)'
set ylabel 'share of backfill''s cost'
set format y '%.0f%%'
set yrange [0:*]
plot dir.'/money.dat' using ($2*100):xtic(1) title 'ideal' lc rgb '#2e86c1', \
     '' using ($3*100) title 'size' lc rgb '#85c1e9', \
     '' using ($4*100) title 'restarts, lost work' lc rgb '#f5b041', \
     '' using ($5*100) title 'capacity class' lc rgb '#c0392b', \
     '' using ($6*100) title 'tariff' lc rgb '#8e44ad', \
     '' using ($7*100) title 'unfinished' lc rgb '#7f8c8d', \
     '' using 0:($8*100) with linespoints lw 2 pt 7 lc rgb '#000000' title 'LP bound'
