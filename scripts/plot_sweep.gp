# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
# Draws the precision sweep's pictures from the CSV files examples/precision_sweep writes:
#   gnuplot -e "dir='precision_sweep'" scripts/plot_sweep.gp
# -> dir/loss_curves.png, dir/loss_scale.png, dir/memory.png
if (!exists("dir")) dir = "precision_sweep"
curves = dir."/curves.csv"
runs = dir."/runs.csv"
set datafile separator ","
set datafile columnheaders
set datafile missing NaN
set terminal pngcairo size 1100,650 font "sans,11" noenhanced
set key outside right top
set grid

# The configurations, in the order they ran (names hold no spaces or commas).
configs = system("tail -n +2 '".curves."' | cut -d, -f1 | uniq | tr '\\n' ' '")

set output dir."/loss_curves.png"
set title "Training loss (mean over 10 steps) per configuration"
set xlabel "step"
set ylabel "training loss"
set logscale y
plot for [c in configs] curves using 2:(strcol(1) eq c ? $3 : NaN) with lines lw 1.5 title c

set output dir."/loss_scale.png"
set title "Loss scale after each step (runs without loss scaling stay at 1)"
set ylabel "loss scale"
set logscale y 2
set format y "%.0f"
stats curves using 4 nooutput
set yrange [0.5:STATS_max * 4]
plot for [c in configs] curves using 2:(strcol(1) eq c ? $4 : NaN) with steps lw 1.5 title c
unset logscale y
set format y "%g"
set yrange [*:*]

set output dir."/memory.png"
set title "Memory of the first training step, by role"
set xlabel ""
set ylabel "MiB"
set style data histograms
set style histogram rowstacked
set style fill solid 0.8 border -1
set boxwidth 0.7
set xtics rotate by -30 left
set bmargin 9
plot runs using 5:xtic(1) title "weights (master + compute copy)", \
     '' using 6 title "gradients", \
     '' using 7 title "optimizer state", \
     '' using 8 title "activations"
