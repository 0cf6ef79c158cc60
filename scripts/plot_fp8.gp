# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
# Draws the FP8 diagnostics that examples/fashion_mnist and examples/char_gpt write (--fp8-csv): for
# each FP8 precision in the file, one PNG of four panels (amax, scale, saturated share, flushed
# share against the step), a line per layer and tensor.
#   gnuplot -e "csv='build/default/fashion_mnist_fp8.csv'; out='build/default/fashion_mnist_fp8'" scripts/plot_fp8.gp
# -> out_<precision>.png for each precision in the file, e.g. build/default/fashion_mnist_fp8_fp8_hybrid_delayed.png
if (!exists("csv")) csv = "fashion_mnist_fp8.csv"
if (!exists("out")) out = "fashion_mnist_fp8"
set datafile separator ","
set datafile columnheaders
set datafile missing NaN
set terminal pngcairo size 1400,900 font "sans,10" noenhanced
set grid
set key outside right top font ",8"

# Columns: 1 precision, 2 step, 3 layer, 4 tensor, 5 format, 6 amax, 7 scale, 8 saturated_share,
# 9 flushed_share, 10 values. Layer paths and tensor names hold no spaces or commas.
precisions = system("tail -n +2 '".csv."' | cut -d, -f1 | awk '!seen[$0]++' | tr '\\n' ' '")
series = system("tail -n +2 '".csv."' | cut -d, -f3,4 | awk '!seen[$0]++' | tr ',' ':' | tr '\\n' ' '")
n = words(series)
# Whether the row is precision p's and series i's; a colour per layer, a dash pattern per tensor
# (an FP8 layer has three: input, weight, output gradient, in that order).
selected(p, i) = strcol(1) eq p && strcol(3).":".strcol(4) eq word(series, i)
# Beyond 12 series (a transformer's dozens of layers) a key per line would cover the panels: the
# lines are then coloured by tensor only, and the key names the three colours.
many = n > 12
colour(i) = many ? (i - 1) % 3 + 1 : (i - 1) / 3 + 1
dash(i) = many ? 1 : (i - 1) % 3 + 1
title_of(i) = many ? "" : word(series, i)
if (many) set key inside right top
# A share of 0 has no place on a log axis: drawn at 1e-9, the floor of the panel.
share(x) = x > 0 ? x : 1e-9

do for [p in precisions] {
  set output out."_".p.".png"
  set multiplot layout 2,2 title p." - FP8 casts, per layer and tensor (diagnostics every few steps)"
  set xlabel "step"
  set logscale y
  set format y "%g"
  set yrange [*:*]
  set title "amax (largest |x| cast since the previous record)"
  plot for [i=1:n] csv using 2:(selected(p, i) ? $6 : NaN) with lines lw 1.3 lc colour(i) dt dash(i) title title_of(i), \
       for [t=1:(many ? 3 : 0)] NaN with lines lw 1.3 lc t title word("input weight output_gradient", t)
  set title "scale (x is multiplied by it before the cast)"
  set logscale y 2
  plot for [i=1:n] csv using 2:(selected(p, i) ? $7 : NaN) with lines lw 1.3 lc colour(i) dt dash(i) title title_of(i), \
       for [t=1:(many ? 3 : 0)] NaN with lines lw 1.3 lc t title word("input weight output_gradient", t)
  set logscale y 10
  set format y "%.0e"
  set yrange [1e-9:1]
  set title "share of values that saturated (|x * scale| > fp8 max)"
  plot for [i=1:n] csv using 2:(selected(p, i) ? share($8) : NaN) with lines lw 1.3 lc colour(i) dt dash(i) \
       title title_of(i), \
       for [t=1:(many ? 3 : 0)] NaN with lines lw 1.3 lc t title word("input weight output_gradient", t)
  set title "share of values flushed to zero (x != 0, fp8(x * scale) = 0)"
  plot for [i=1:n] csv using 2:(selected(p, i) ? share($9) : NaN) with lines lw 1.3 lc colour(i) dt dash(i) \
       title title_of(i), \
       for [t=1:(many ? 3 : 0)] NaN with lines lw 1.3 lc t title word("input weight output_gradient", t)
  unset multiplot
}
