//! The `tetrad stats --plot` chart, as PNG or SVG, drawn by tetrad itself.
//!
//! The chart answers the two questions `stats` is for, at a glance: *how evenly are the codes
//! used* (top panel: the pooled histogram of nibble — or byte, or split-code — values, with
//! the uniform share that would make them incompressible as a dashed line) and *how many bits
//! per weight does each tensor really need* (bottom panel: each tensor's order-0 entropy as a
//! bar, its order-1 entropy as a mark, and the raw code width as a dashed line). A footer
//! gives the total's ratio bound and the ratios of int4-rans256-g0, CFS1 and zstd-19, and says
//! plainly when the codes barely compress.
//!
//! The layout is computed once, in integer pixels, as a list of [`Mark`]s (a [`Chart`]); two
//! small renderers turn it into an SVG document ([`svg`]) or an RGB raster ([`render`], on a
//! [`canvas::Canvas`] with the hand-drawn bitmap [`font`]) that [`write_png`] encodes with the
//! `png` crate (PNG needs deflate and CRC-32; that crate is the maintained standard). No
//! plotting library and no system font is involved, so the output is byte-identical for the
//! same report on every machine, and a test can compute where each bar must be from the
//! public layout constants ([`HIST`], [`TENSORS`], [`Area::slot`], [`colours`]).
//!
//! Layout contract (what the tests check):
//! - histogram bar of value `k` (of `A` = 16, 256 or `2^b` values): columns `HIST.slot(k, A)`
//!   less a gap of one eighth of the slot on each side; it rises from `HIST.bottom()` in
//!   [`colours::HIST_BAR`], with a height proportional to the value's count (the tallest bar
//!   spans at least 40% of the panel);
//! - tensor bar `i` of `n`: columns `TENSORS.slot(i, n)` less a gap of one fifth of the slot,
//!   height `round(H0 / top · TENSORS.h)` where `top` is 4 bits, or 8 when a stream of wider
//!   symbols (bytes, 5- or 6-bit codes) was measured; its order-1 entropy is a 3-pixel mark in
//!   [`colours::H1_MARK`] centred at the matching height; the raw width of each symbol kind
//!   measured (4, 8, `b` bits) is a dashed line in [`colours::RAW_WIDTH`].

pub mod canvas;
pub mod font;

use std::io::Write;
use std::path::Path;

use crate::error::{Class, Classified};

use super::{Report, Symbols, Total, ratio, ratio_bound};
use canvas::{Canvas, Rgb};

/// Chart width in pixels.
pub const WIDTH: u32 = 1200;
/// Chart height in pixels.
pub const HEIGHT: u32 = 800;

/// A rectangle of the chart, in pixels (`x`, `y` = top-left).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Area {
    /// Left column.
    pub x: i64,
    /// Top row.
    pub y: i64,
    /// Width.
    pub w: u32,
    /// Height.
    pub h: u32,
}

impl Area {
    /// One past the right column.
    pub const fn right(&self) -> i64 {
        self.x + self.w as i64
    }

    /// One past the bottom row: bars rise from here, the x axis is drawn on this row.
    pub const fn bottom(&self) -> i64 {
        self.y + self.h as i64
    }

    /// Columns `[left, right)` of slot `k` when the width is split into `n` equal slots
    /// (integer division; `n = 0` is read as one slot).
    pub fn slot(&self, k: usize, n: usize) -> (i64, i64) {
        let n = n.max(1) as u64;
        let at = |k: u64| self.x + i64::try_from(k * u64::from(self.w) / n).unwrap_or(0);
        let k = (k as u64).min(n);
        (at(k), at((k + 1).min(n)))
    }
}

/// The plot area of the histogram (top panel).
pub const HIST: Area = Area { x: 110, y: 70, w: 1040, h: 240 };
/// The plot area of the per-tensor bits per weight (bottom panel).
pub const TENSORS: Area = Area { x: 110, y: 440, w: 1040, h: 240 };

/// The chart's colours.
pub mod colours {
    use super::Rgb;
    /// Background.
    pub const BACKGROUND: Rgb = [255, 255, 255];
    /// Labels.
    pub const TEXT: Rgb = [20, 20, 20];
    /// Axes and tick marks.
    pub const AXIS: Rgb = [0, 0, 0];
    /// Horizontal grid lines behind the bars.
    pub const GRID: Rgb = [222, 222, 222];
    /// Histogram bars.
    pub const HIST_BAR: Rgb = [68, 114, 196];
    /// The uniform share (a code stream that cannot be compressed by an order-0 coder).
    pub const UNIFORM: Rgb = [192, 0, 0];
    /// Per-tensor order-0 entropy bars.
    pub const H0_BAR: Rgb = [237, 125, 49];
    /// Per-tensor order-1 entropy marks.
    pub const H1_MARK: Rgb = [0, 110, 50];
    /// The raw code width (4 or 8 bits).
    pub const RAW_WIDTH: Rgb = [90, 90, 90];
}

/// How a text mark is placed horizontally relative to its `x`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    /// `x` is the left edge.
    Start,
    /// `x` is the centre.
    Middle,
    /// `x` is the right edge.
    End,
}

/// One drawing instruction, in pixels.
#[derive(Debug, Clone, PartialEq)]
pub enum Mark {
    /// A filled rectangle (`title`: the SVG hover text).
    Rect {
        /// Left column.
        x: i64,
        /// Top row.
        y: i64,
        /// Width.
        w: u32,
        /// Height (0 draws nothing but keeps the SVG hover text).
        h: u32,
        /// Fill.
        colour: Rgb,
        /// Hover text (SVG only).
        title: Option<String>,
    },
    /// A horizontal line from (`x`, `y`) rightwards, `thick` rows from `y` down.
    HLine {
        /// Left column.
        x: i64,
        /// Top row.
        y: i64,
        /// Length.
        len: u32,
        /// Thickness.
        thick: u32,
        /// `(on, off)` dash pattern; `None` is solid.
        dash: Option<(u32, u32)>,
        /// Colour.
        colour: Rgb,
    },
    /// A vertical line from (`x`, `y`) downwards, `thick` columns from `x` right.
    VLine {
        /// Left column.
        x: i64,
        /// Top row.
        y: i64,
        /// Length.
        len: u32,
        /// Thickness.
        thick: u32,
        /// Colour.
        colour: Rgb,
    },
    /// One line of text in the bitmap font at [`font::SCALE`]; `y` is the top of the capitals.
    Text {
        /// Anchor column.
        x: i64,
        /// Top row.
        y: i64,
        /// Placement relative to `x`.
        anchor: Anchor,
        /// The text (printable ASCII; anything else is drawn as a box).
        text: String,
        /// Colour.
        colour: Rgb,
    },
}

/// A chart: its size and its marks, drawn in order (later marks cover earlier ones).
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// The marks.
    pub marks: Vec<Mark>,
}

/// The output formats of `--plot`, chosen by the file's extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlotFormat {
    /// `.png`: the chart rasterised by [`render`], encoded by [`write_png`].
    Png,
    /// `.svg`: the chart as an SVG document ([`svg`]).
    Svg,
}

/// Why a chart could not be written as asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlotError {
    /// The file name does not end in an extension a chart is written in.
    #[error("unknown chart format: expected a file name ending in .png or .svg")]
    UnknownExtension,
}

impl Classified for PlotError {
    fn class_of(&self) -> Class {
        self.class()
    }
}

impl PlotError {
    /// The refusal class.
    pub const fn class(&self) -> Class {
        match self {
            Self::UnknownExtension => Class::PlotExtension,
        }
    }
}

impl PlotFormat {
    /// The format of `path`, by its extension (case-insensitive): `.png` or `.svg`.
    pub fn from_path(path: &Path) -> Result<Self, PlotError> {
        match path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
            Some("png") => Ok(Self::Png),
            Some("svg") => Ok(Self::Svg),
            _ => Err(PlotError::UnknownExtension),
        }
    }
}

/// Writes the chart of `report` to `path` atomically (a temporary file renamed into place,
/// see [`crate::output`]), in the format its extension names.
pub fn write(report: &Report, path: &Path) -> std::io::Result<()> {
    let format = PlotFormat::from_path(path)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    let c = chart(report);
    match format {
        PlotFormat::Png => {
            let raster = render(&c);
            crate::output::write_file(path, |w| write_png(&raster, w))
        }
        PlotFormat::Svg => crate::output::write_bytes(path, svg(&c).as_bytes()),
    }
}

/// Encodes `canvas` as an 8-bit RGB PNG (fixed settings: the same canvas gives the same bytes).
pub fn write_png(canvas: &Canvas, out: impl Write) -> std::io::Result<()> {
    let mut enc = png::Encoder::new(out, canvas.width(), canvas.height());
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    enc.set_compression(png::Compression::Balanced);
    let mut w = enc.write_header().map_err(std::io::Error::other)?;
    w.write_image_data(canvas.rgb_bytes()).map_err(std::io::Error::other)?;
    w.finish().map_err(std::io::Error::other)
}

/// Rasterises a chart.
pub fn render(chart: &Chart) -> Canvas {
    let mut c = Canvas::new(chart.width, chart.height, colours::BACKGROUND);
    for m in &chart.marks {
        match m {
            Mark::Rect { x, y, w, h, colour, .. } => c.fill_rect(*x, *y, *w, *h, *colour),
            Mark::HLine { x, y, len, thick, dash, colour } => {
                c.hline(*x, *y, *len, *thick, *dash, *colour);
            }
            Mark::VLine { x, y, len, thick, colour } => c.vline(*x, *y, *len, *thick, *colour),
            Mark::Text { x, y, anchor, text, colour } => {
                let w = i64::from(font::text_width(text, font::SCALE));
                let left = match anchor {
                    Anchor::Start => *x,
                    Anchor::Middle => x.saturating_sub(w / 2),
                    Anchor::End => x.saturating_sub(w),
                };
                c.text(left, *y, text, font::SCALE, *colour);
            }
        }
    }
    c
}

fn hex(c: Rgb) -> String {
    format!("#{:02x}{:02x}{:02x}", c[0], c[1], c[2])
}

fn xml_escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            c if c.is_control() => o.push('\u{fffd}'),
            c => o.push(c),
        }
    }
    o
}

/// The chart as a self-contained SVG document (monospace text, hover titles on the bars).
pub fn svg(chart: &Chart) -> String {
    use std::fmt::Write as _;
    let (w, h) = (chart.width, chart.height);
    // A 20 px monospace font has about the bitmap font's 14 px capitals and 12 px advance.
    let mut o = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"monospace\" font-size=\"20\" xml:space=\"preserve\">\n<rect width=\"100%\" height=\"100%\" fill=\"{}\"/>\n",
        hex(colours::BACKGROUND)
    );
    for m in &chart.marks {
        let _ = match m {
            Mark::Rect { x, y, w, h, colour, title } => {
                let t = title
                    .as_deref()
                    .map_or_else(String::new, |t| format!("<title>{}</title>", xml_escape(t)));
                writeln!(
                    o,
                    "<rect x=\"{x}\" y=\"{y}\" width=\"{w}\" height=\"{h}\" fill=\"{}\">{t}</rect>",
                    hex(*colour)
                )
            }
            Mark::HLine { x, y, len, thick, dash, colour } => {
                let d = dash
                    .map_or_else(String::new, |(a, b)| format!(" stroke-dasharray=\"{a} {b}\""));
                let cy = *y as f64 + f64::from(*thick) / 2.0;
                writeln!(
                    o,
                    "<line x1=\"{x}\" y1=\"{cy}\" x2=\"{}\" y2=\"{cy}\" stroke=\"{}\" stroke-width=\"{thick}\"{d}/>",
                    x + i64::from(*len),
                    hex(*colour)
                )
            }
            Mark::VLine { x, y, len, thick, colour } => {
                let cx = *x as f64 + f64::from(*thick) / 2.0;
                writeln!(
                    o,
                    "<line x1=\"{cx}\" y1=\"{y}\" x2=\"{cx}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"{thick}\"/>",
                    y + i64::from(*len),
                    hex(*colour)
                )
            }
            Mark::Text { x, y, anchor, text, colour } => {
                let a = match anchor {
                    Anchor::Start => "start",
                    Anchor::Middle => "middle",
                    Anchor::End => "end",
                };
                writeln!(
                    o,
                    "<text x=\"{x}\" y=\"{}\" text-anchor=\"{a}\" fill=\"{}\">{}</text>",
                    y + i64::from(font::CAP_H * font::SCALE),
                    hex(*colour),
                    xml_escape(text)
                )
            }
        };
    }
    o.push_str("</svg>\n");
    o
}

/// A readable axis over `[0, v]`: the smallest step in {1, 2, 5}·10^e that covers `v` in at
/// most `ticks` steps. Returns (step, steps, decimals to print a tick with).
fn nice_axis(v: f64, ticks: u32) -> (f64, u32, usize) {
    if v.is_nan() || v <= 0.0 {
        return (1.0, 1, 0);
    }
    // Start one decade below the smallest possible step; the loop climbs from there.
    // A float-to-int conversion of a small, finite logarithm: it cannot truncate.
    #[allow(clippy::cast_possible_truncation)]
    let mut e = (v / f64::from(ticks.max(1))).log10().floor() as i32 - 1;
    loop {
        for m in [1.0, 2.0, 5.0] {
            let step = m * 10f64.powi(e);
            let n = (v / step - 1e-9).ceil().max(1.0);
            if n <= f64::from(ticks) {
                // n is a whole number in 1..=ticks.
                #[allow(clippy::cast_possible_truncation)]
                let n = n as u32;
                return (step, n, usize::try_from(-e.min(0)).unwrap_or(0));
            }
        }
        e += 1;
    }
}

/// The smallest step in {1, 2, 5}·10^e that reaches `v` in at most `ticks` steps.
fn int_step(v: usize, ticks: usize) -> usize {
    let mut decade = 1usize;
    loop {
        for m in [1, 2, 5] {
            let step = decade.saturating_mul(m);
            if v.div_ceil(step) <= ticks.max(1) {
                return step;
            }
        }
        decade = decade.saturating_mul(10);
    }
}

/// `round(v / top · len)` clamped to `[0, len]`, in pixels.
fn scaled(v: f64, top: f64, len: u32) -> u32 {
    if top <= 0.0 || v.is_nan() || v <= 0.0 {
        return 0;
    }
    let px = (v / top * f64::from(len)).round().min(f64::from(len));
    // px is finite and within [0, len].
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let px = px as u32;
    px
}

/// Pixel height of a bar `v` on an axis topping at `top`, as a row offset from the bottom.
fn row(area: Area, v: f64, top: f64) -> i64 {
    area.bottom() - i64::from(scaled(v, top, area.h))
}

struct Marks(Vec<Mark>);

impl Marks {
    fn text(&mut self, x: i64, y: i64, anchor: Anchor, text: impl Into<String>) {
        self.0.push(Mark::Text { x, y, anchor, text: text.into(), colour: colours::TEXT });
    }

    fn rect(&mut self, x: i64, y: i64, w: u32, h: u32, colour: Rgb, title: Option<String>) {
        self.0.push(Mark::Rect { x, y, w, h, colour, title });
    }

    fn hline(&mut self, x: i64, y: i64, len: u32, thick: u32, dash: Option<(u32, u32)>, c: Rgb) {
        self.0.push(Mark::HLine { x, y, len, thick, dash, colour: c });
    }

    fn vline(&mut self, x: i64, y: i64, len: u32, thick: u32, colour: Rgb) {
        self.0.push(Mark::VLine { x, y, len, thick, colour });
    }

    /// Grid lines and labelled ticks of a y axis over `[0, steps · step]`.
    fn y_axis(&mut self, a: Area, step: f64, steps: u32, decimals: usize, suffix: &str) {
        let top = step * f64::from(steps);
        for k in 0..=steps {
            let v = step * f64::from(k);
            let y = row(a, v, top);
            if k > 0 {
                self.hline(a.x, y, a.w, 1, None, colours::GRID);
            }
            self.hline(a.x - 8, y, 6, 2, None, colours::AXIS);
            self.text(a.x - 12, y - 7, Anchor::End, format!("{v:.decimals$}{suffix}"));
        }
    }

    /// The two axis lines (drawn last, over the bars' feet).
    fn axes(&mut self, a: Area) {
        self.vline(a.x - 2, a.y, a.h + 2, 2, colours::AXIS);
        self.hline(a.x - 2, a.bottom(), a.w + 2, 2, None, colours::AXIS);
    }

    /// A labelled x tick below slot `k` of `n`.
    fn x_tick(&mut self, a: Area, k: usize, n: usize, label: String) {
        let (l, r) = a.slot(k, n);
        let c = (l + r) / 2;
        self.vline(c, a.bottom() + 2, 5, 2, colours::AXIS);
        self.text(c, a.bottom() + 10, Anchor::Middle, label);
    }

    /// A legend, right-aligned to `right`, on the text row `y`: each item is a swatch (a
    /// filled box, or a dashed line when `dashed`) and its label.
    fn legend(&mut self, right: i64, y: i64, items: &[(Rgb, bool, &str)]) {
        const SWATCH: u32 = 28;
        const GAP: i64 = 28;
        let widths: Vec<i64> = items
            .iter()
            .map(|(_, _, t)| i64::from(SWATCH) + 8 + i64::from(font::text_width(t, font::SCALE)))
            .collect();
        let mut x = right - widths.iter().sum::<i64>() - GAP * (widths.len() as i64 - 1).max(0);
        for ((colour, dashed, label), w) in items.iter().zip(widths) {
            if *dashed {
                self.hline(x, y + 6, SWATCH, 3, Some((6, 4)), *colour);
            } else {
                self.rect(x, y, SWATCH, 14, *colour, None);
            }
            self.text(x + i64::from(SWATCH) + 8, y, Anchor::Start, *label);
            x += w + GAP;
        }
    }
}

fn histogram(m: &mut Marks, total: Option<&Total>) {
    let a = HIST;
    let Some(t) = total else {
        m.text(20, 14, Anchor::Start, "no quantized weights measured: nothing to plot");
        m.axes(a);
        return;
    };
    let word = t.symbols.name();
    let n = t.counts.symbols();
    m.text(
        20,
        14,
        Anchor::Start,
        format!(
            "{word} histogram, pooled over {} tensor(s): {n} {word}s, H0 {:.4} bits, H1 {:.4} bits",
            t.tensors,
            t.counts.entropy0(),
            t.counts.entropy1()
        ),
    );
    let alphabet = t.counts.hist.len();
    let share = |c: u64| if n == 0 { 0.0 } else { c as f64 * 100.0 / n as f64 };
    let max = t.counts.hist.iter().map(|&c| share(c)).fold(0.0, f64::max);
    let (step, steps, decimals) = nice_axis(max, 5);
    let top = step * f64::from(steps);
    m.text(20, a.y - 34, Anchor::Start, format!("% of {word}s"));
    let uniform_label = format!("uniform: 1/{alphabet} each");
    m.legend(
        a.right(),
        a.y - 34,
        &[
            (colours::HIST_BAR, false, "share of each value"),
            (colours::UNIFORM, true, &uniform_label),
        ],
    );
    m.y_axis(a, step, steps, decimals, "");
    for (k, &c) in t.counts.hist.iter().enumerate() {
        let (l, r) = a.slot(k, alphabet);
        let gap = (r - l) / 8;
        let w = u32::try_from(r - l - 2 * gap).unwrap_or(1).max(1);
        let bh = scaled(share(c), top, a.h);
        let title = format!("value {k}: {c} ({:.3}%)", share(c));
        m.rect(l + gap, a.bottom() - i64::from(bh), w, bh, colours::HIST_BAR, Some(title));
    }
    let uy = row(a, 100.0 / alphabet as f64, top);
    m.hline(a.x, uy - 1, a.w, 2, Some((10, 6)), colours::UNIFORM);
    if alphabet <= 16 {
        for k in 0..alphabet {
            m.x_tick(a, k, alphabet, k.to_string());
        }
    } else {
        for k in (0..alphabet).step_by(32).chain([alphabet - 1]) {
            m.x_tick(a, k, alphabet, k.to_string());
        }
    }
    m.text(
        a.x + i64::from(a.w / 2),
        a.bottom() + 34,
        Anchor::Middle,
        format!("{word} value (the code a lossless coder sees)"),
    );
    m.axes(a);
}

fn per_tensor(m: &mut Marks, report: &Report) {
    let a = TENSORS;
    let n = report.tensors.len();
    // The axis reaches the widest raw width measured: 4 bits, else 8.
    let bytes = report.tensors.iter().any(|t| t.symbols.bits() > 4);
    let top: u32 = if bytes { 8 } else { 4 };
    m.text(
        20,
        a.y - 58,
        Anchor::Start,
        format!("bits per weight of each tensor ({n} tensor(s), listed order)"),
    );
    m.text(20, a.y - 34, Anchor::Start, "bits/weight");
    m.legend(
        a.right(),
        a.y - 34,
        &[
            (colours::H0_BAR, false, "H0 (order 0)"),
            (colours::H1_MARK, false, "H1 (order 1, previous symbol)"),
            (colours::RAW_WIDTH, true, "raw width"),
        ],
    );
    m.y_axis(a, if bytes { 2.0 } else { 1.0 }, 4, 0, "");
    let top = f64::from(top);
    for (k, t) in report.tensors.iter().enumerate() {
        let (l, r) = a.slot(k, n);
        let gap = (r - l) / 5;
        let w = u32::try_from(r - l - 2 * gap).unwrap_or(1).max(1);
        let (h0, h1) = (t.counts.entropy0(), t.counts.entropy1());
        let bh = scaled(h0, top, a.h);
        let title =
            format!("{} [{}] {}: H0 {h0:.4} bits, H1 {h1:.4} bits", t.name, t.file, t.format);
        m.rect(l + gap, a.bottom() - i64::from(bh), w, bh, colours::H0_BAR, Some(title));
        m.rect(l + gap, row(a, h1, top) - 1, w, 3, colours::H1_MARK, None);
    }
    let mut widths: Vec<u32> = report.tensors.iter().map(|t| t.symbols.bits()).collect();
    widths.sort_unstable();
    widths.dedup();
    for width in widths {
        m.hline(a.x, row(a, f64::from(width), top) - 1, a.w, 2, Some((10, 6)), colours::RAW_WIDTH);
    }
    if n > 0 {
        let step = int_step(n - 1, if n <= 16 { 16 } else { 10 });
        for k in (0..n).step_by(step) {
            m.x_tick(a, k, n, k.to_string());
        }
    }
    m.text(
        a.x + i64::from(a.w / 2),
        a.bottom() + 34,
        Anchor::Middle,
        "tensor index (--per-tensor lists them by name)",
    );
    m.axes(a);
}

fn footer(m: &mut Marks, total: Option<&Total>) {
    let Some(t) = total else { return };
    let h = t.counts.entropy0();
    let bits = f64::from(t.symbols.bits());
    let r = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.3}x"));
    let mut line = format!("total: bound {}", r(ratio_bound(t.symbols, h)));
    if t.symbols == Symbols::Nibble {
        line += &format!("   rans256 {}", r(ratio(t.bytes, t.rans256_bytes)));
    }
    line += &format!(
        "   CFS1 {}   zstd-19 {}   order-1 gain {:.3} bits",
        r(ratio(t.bytes, t.cfs1_bytes)),
        r(ratio(t.bytes, t.zstd19_bytes)),
        h - t.counts.entropy1()
    );
    m.text(20, 740, Anchor::Start, line);
    let saving = (1.0 - h / bits) * 100.0;
    let verdict = if saving < 10.0 {
        format!("these codes barely compress: an order-0 coder saves at most {saving:.1}%")
    } else {
        format!("lossless coding can save up to {saving:.1}% (order 0)")
    };
    m.text(20, 766, Anchor::Start, verdict);
}

/// Lays out the chart of a report (see the module documentation for the layout contract).
pub fn chart(report: &Report) -> Chart {
    let total = report.nibbles.as_ref().or(report.bytes.as_ref()).or(report.split.first());
    let mut m = Marks(Vec::new());
    histogram(&mut m, total);
    per_tensor(&mut m, report);
    footer(&mut m, total);
    Chart { width: WIDTH, height: HEIGHT, marks: m.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_axes() {
        assert_eq!(nice_axis(23.4, 5), (5.0, 5, 0));
        assert_eq!(nice_axis(10.0, 5), (2.0, 5, 0));
        assert_eq!(nice_axis(6.3, 5), (2.0, 4, 0));
        let (s, n, d) = nice_axis(0.42, 5);
        assert!((s - 0.1).abs() < 1e-12 && n == 5 && d == 1);
        assert_eq!(nice_axis(100.0, 5), (20.0, 5, 0));
        assert_eq!(nice_axis(0.0, 5), (1.0, 1, 0));
        assert_eq!(nice_axis(f64::NAN, 5), (1.0, 1, 0));
        assert_eq!(int_step(15, 16), 1);
        assert_eq!(int_step(209, 10), 50);
        assert_eq!(int_step(0, 10), 1);
        assert!(usize::MAX.div_ceil(int_step(usize::MAX, 10)) <= 10);
        for v in [0.001, 0.7, 1.0, 3.3, 6.25, 17.0, 99.9, 209.0] {
            let (s, n, _) = nice_axis(v, 5);
            assert!(s * f64::from(n) >= v - 1e-9 && n <= 5, "{v}: {s} x {n}");
            // The tallest bar spans at least 40% of the axis.
            assert!(v / (s * f64::from(n)) >= 0.4, "{v}: {s} x {n}");
        }
    }

    #[test]
    fn slots_tile_the_area() {
        let a = Area { x: 10, y: 0, w: 100, h: 10 };
        let mut at = a.x;
        for k in 0..7 {
            let (l, r) = a.slot(k, 7);
            assert_eq!(l, at);
            assert!(r > l);
            at = r;
        }
        assert_eq!(at, a.right());
        assert_eq!(a.slot(0, 0), (10, 110));
        assert_eq!(a.slot(usize::MAX, 3), (110, 110));
    }

    #[test]
    fn extensions() {
        assert_eq!(PlotFormat::from_path(Path::new("a/b.PNG")), Ok(PlotFormat::Png));
        assert_eq!(PlotFormat::from_path(Path::new("c.svg")), Ok(PlotFormat::Svg));
        for bad in ["c.jpg", "png", "c.png.txt", "", "c."] {
            let e = PlotFormat::from_path(Path::new(bad)).unwrap_err();
            assert_eq!(Class::of(&e), Class::PlotExtension);
            assert!(e.to_string().contains(".png or .svg"));
        }
    }

    fn measured(name: String, symbols: Symbols, data: Vec<u8>) -> super::super::Measured {
        super::super::Measured {
            name,
            file: "f".into(),
            format: "x".into(),
            format_source: "stamp",
            shape: vec![1, data.len() as u64],
            symbols,
            row_bytes: data.len(),
            data,
            split: None,
        }
    }

    /// Every mark of `c` lies on the canvas (text by its rendered width).
    fn inside(c: &Chart) {
        let (w, h) = (i64::from(c.width), i64::from(c.height));
        for m in &c.marks {
            let (x0, y0, x1, y1) = match m {
                Mark::Rect { x, y, w, h, .. } => (*x, *y, x + i64::from(*w), y + i64::from(*h)),
                Mark::HLine { x, y, len, thick, .. } => {
                    (*x, *y, x + i64::from(*len), y + i64::from(*thick))
                }
                Mark::VLine { x, y, len, thick, .. } => {
                    (*x, *y, x + i64::from(*thick), y + i64::from(*len))
                }
                Mark::Text { x, y, anchor, text, .. } => {
                    let tw = i64::from(font::text_width(text, font::SCALE));
                    let l = match anchor {
                        Anchor::Start => *x,
                        Anchor::Middle => x - tw / 2,
                        Anchor::End => x - tw,
                    };
                    (l, *y, l + tw, y + i64::from(font::GLYPH_H * font::SCALE))
                }
            };
            assert!(x0 >= 0 && y0 >= 0 && x1 <= w && y1 <= h, "off the canvas: {m:?}");
        }
    }

    #[test]
    fn many_tensors_and_mixed_symbols_stay_on_the_canvas() {
        let opts = super::super::StatsOptions {
            quantize: crate::quantize_container::QuantFormat::Int4Row,
            zstd: false,
        };
        // 2000 tensors: more than the panel's 1040 columns, so slots are under a pixel wide.
        let mut ms: Vec<_> = (0..2000u32)
            .map(|k| measured(format!("t{k}"), Symbols::Nibble, vec![(k % 251) as u8; 4]))
            .collect();
        ms.push(measured("b".into(), Symbols::Byte, (0..=255).collect()));
        let report = super::super::measure(ms, Vec::new(), &opts);
        let c = chart(&report);
        inside(&c);
        let raster = render(&c);
        assert_eq!((raster.width(), raster.height()), (WIDTH, HEIGHT));
        let bars = c
            .marks
            .iter()
            .filter(|m| matches!(m, Mark::Rect { colour, .. } if *colour == colours::H0_BAR))
            .count();
        assert_eq!(bars, 2001 + 1, "a bar per tensor and the legend swatch");
        let raw = |c: &Chart| -> Vec<i64> {
            c.marks
                .iter()
                .filter_map(|m| match m {
                    Mark::HLine { y, len, colour, .. }
                        if *colour == colours::RAW_WIDTH && *len == TENSORS.w =>
                    {
                        Some(*y)
                    }
                    _ => None,
                })
                .collect()
        };
        assert_eq!(raw(&c).len(), 2, "4 and 8 bits");
        // Byte streams only: the 8-bit line alone, at the top of the 0..8 axis.
        let bytes = vec![measured("b".into(), Symbols::Byte, (0..=255).collect())];
        let c = chart(&super::super::measure(bytes, Vec::new(), &opts));
        assert_eq!(raw(&c), [TENSORS.y - 1]);
        // An empty report, too.
        let empty = super::super::measure(Vec::new(), Vec::new(), &opts);
        inside(&chart(&empty));
        assert!(raw(&chart(&empty)).is_empty());
    }

    #[test]
    fn svg_escapes_text() {
        let c = Chart {
            width: 10,
            height: 10,
            marks: vec![Mark::Text {
                x: 0,
                y: 0,
                anchor: Anchor::Start,
                text: "<a & 'b'>\u{1}".into(),
                colour: colours::TEXT,
            }],
        };
        let s = svg(&c);
        assert!(s.contains("&lt;a &amp; &apos;b&apos;&gt;\u{fffd}"), "{s}");
    }
}
