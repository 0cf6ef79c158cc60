# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
# Draws the ResNet example's per-class test accuracy, one bar per precision, from the confusion
# matrices `resnet --confusion PREFIX` writes (PREFIX.<precision>.csv: rows the true classes, columns
# the predicted ones) for the precisions the per-epoch CSV lists, in the order they ran:
#   gnuplot -e "confusion='build/default/resnet_confusion'; metrics='build/default/resnet_metrics.csv'; \
#               out='build/default/resnet_per_class.png'" scripts/plot_resnet.gp
if (!exists("confusion")) confusion = "resnet_confusion"
if (!exists("metrics")) metrics = "resnet_metrics.csv"
if (!exists("out")) out = "resnet_per_class.png"
set datafile separator ","
set datafile columnheaders

# The precisions of the run (names hold no spaces or commas), and each one's overall test accuracy:
# the diagonal's sum over all the counts.
configs = system("tail -n +2 '".metrics."' | cut -d, -f1 | uniq | tr '\\n' ' '")
n = words(configs)
file(i) = confusion.".".word(configs, i).".csv"
row_total = "sum [k = 2:11] column(k)"
array accuracy[n]
do for [i = 1:n] {
  stats file(i) using (column(int(column(0)) + 2)) nooutput
  correct = STATS_sum
  stats file(i) using (@row_total) nooutput
  accuracy[i] = 100 * correct / STATS_sum
}

set terminal pngcairo size 1100,600 font "sans,11" noenhanced
set output out
set title "ResNet on Fashion-MNIST: test accuracy per class and precision"
set ylabel "test accuracy (%)"
set yrange [0:105]
set grid ytics
set key outside right top
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set xtics rotate by -30 left
set bmargin 6
plot for [i = 1:n] file(i) using (100 * column(int(column(0)) + 2) / (@row_total)):xtic(1) \
     title sprintf("%s (%.2f%%)", word(configs, i), accuracy[i])
