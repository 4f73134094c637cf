//! `tetrad stats --plot`: the PNG chart is decoded here (with the `png` crate) and checked
//! pixel by pixel against numbers computed independently in the test — bar heights follow the
//! histogram and the per-tensor entropies, an absent value has no bar, the legend and labels
//! are drawn — and it is deterministic, written atomically, the same chart as the SVG, and a
//! file name that is neither `.png` nor `.svg` is a usage error (exit 2).
#![allow(clippy::cast_possible_truncation)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use tetrad::shard::{HeaderStyle, OutTensor, shard_bytes};
use tetrad::stats::plot::{self, Area, HIST, TENSORS, colours};

type Rgb = [u8; 3];

fn tetrad(args: &[&str], paths: &[&Path]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tetrad")).args(args).args(paths).output().unwrap()
}

fn ok(o: &Output) {
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Packs nibbles two per byte, low nibble first.
fn pack(nibbles: &[u8]) -> Vec<u8> {
    nibbles.chunks(2).map(|p| p[0] | p.get(1).copied().unwrap_or(0) << 4).collect()
}

/// The first tensor's nibbles: value `k` occurs `8 (k + 1)` times, except 12, which never does.
fn counts_a() -> [u64; 16] {
    std::array::from_fn(|k| if k == 12 { 0 } else { 8 * (k as u64 + 1) })
}

/// A container and the packed codes of its two int4-row tensors.
struct Fixture {
    path: PathBuf,
    a: Vec<u8>,
    b: Vec<u8>,
}

/// Two stamped int4-row tensors with designed histograms: `a` ([`counts_a`], 12 rows of 41
/// bytes, values interleaved) and `b` (values 0..=3 only, 8 rows of 32 bytes); `with_bytes`
/// adds an int8-row tensor `c` (4 rows of 64 bytes).
fn fixture(dir: &Path, with_bytes: bool) -> Fixture {
    let mut left = counts_a();
    let mut na = Vec::new();
    while left.iter().any(|&c| c > 0) {
        for (k, c) in left.iter_mut().enumerate() {
            if *c > 0 {
                na.push(k as u8);
                *c -= 1;
            }
        }
    }
    assert_eq!(na.len(), 984);
    let nb: Vec<u8> = (0..512u32).map(|k| ((k * 7 + k / 5) % 4) as u8).collect();
    let (a, b) = (pack(&na), pack(&nb));
    let c: Vec<u8> = (0..4 * 64u32).map(|k| (k * 37 % 251) as u8).collect();
    let sa = vec![0u8; 4 * 12];
    let sb = vec![0u8; 4 * 8];
    let sc = vec![0u8; 4 * 4];
    let mut t = vec![
        OutTensor { name: "x.a", dtype: "U8", shape: &[12, 41], data: &a },
        OutTensor { name: "x.a.qs", dtype: "F32", shape: &[12], data: &sa },
        OutTensor { name: "x.b", dtype: "U8", shape: &[8, 32], data: &b },
        OutTensor { name: "x.b.qs", dtype: "F32", shape: &[8], data: &sb },
    ];
    let mut stamps = r#"{"x.a": "int4-row", "x.b": "int4-row""#.to_owned();
    if with_bytes {
        t.push(OutTensor { name: "x.c", dtype: "U8", shape: &[4, 64], data: &c });
        t.push(OutTensor { name: "x.c.qs", dtype: "F32", shape: &[4], data: &sc });
        stamps += r#", "x.c": "int8-row""#;
    }
    stamps += "}";
    let meta: BTreeMap<String, String> = [("colibri.fmt".to_owned(), stamps)].into();
    let path = dir.join("m.safetensors");
    std::fs::write(&path, shard_bytes(&meta, &t, HeaderStyle::EscapedUnpadded).unwrap()).unwrap();
    Fixture { path, a, b }
}

struct Image {
    w: u32,
    h: u32,
    rgb: Vec<u8>,
}

impl Image {
    fn decode(bytes: &[u8]) -> Self {
        let dec = png::Decoder::new(std::io::Cursor::new(bytes));
        let mut r = dec.read_info().unwrap();
        let mut rgb = vec![0u8; r.output_buffer_size().unwrap()];
        let info = r.next_frame(&mut rgb).unwrap();
        assert_eq!(info.color_type, png::ColorType::Rgb);
        assert_eq!(info.bit_depth, png::BitDepth::Eight);
        rgb.truncate(info.buffer_size());
        Self { w: info.width, h: info.height, rgb }
    }

    fn at(&self, x: i64, y: i64) -> Rgb {
        assert!((0..i64::from(self.w)).contains(&x) && (0..i64::from(self.h)).contains(&y));
        let i = ((y * i64::from(self.w) + x) * 3) as usize;
        [self.rgb[i], self.rgb[i + 1], self.rgb[i + 2]]
    }

    /// Height of the bar of colour `c` standing on `a.bottom()` in column `x`: the distance
    /// from the bottom to its topmost pixel (lines drawn over a bar do not shorten it).
    fn bar_height(&self, a: Area, x: i64, c: Rgb) -> i64 {
        (a.y..a.bottom()).find(|&y| self.at(x, y) == c).map_or(0, |top| a.bottom() - top)
    }

    /// Rows of column `x` within `a` that have colour `c`.
    fn rows_of(&self, a: Area, x: i64, c: Rgb) -> Vec<i64> {
        (a.y..a.bottom()).filter(|&y| self.at(x, y) == c).collect()
    }

    /// Whether colour `c` occurs in the band of rows `[y0, y1)` between columns `[x0, x1)`.
    fn has(&self, (x0, x1): (i64, i64), (y0, y1): (i64, i64), c: Rgb) -> bool {
        (y0..y1).any(|y| (x0..x1).any(|x| self.at(x, y) == c))
    }
}

fn entropy(hist: &[u64]) -> f64 {
    let n: u64 = hist.iter().sum();
    -hist
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| c as f64 / n as f64 * (c as f64 / n as f64).log2())
        .sum::<f64>()
}

/// Order-1 conditional entropy of nibble rows (context: previous nibble of the same row).
fn entropy1(data: &[u8], row_bytes: usize) -> f64 {
    let mut p = [[0u64; 16]; 16];
    for row in data.chunks(row_bytes) {
        let nib: Vec<usize> =
            row.iter().flat_map(|&b| [usize::from(b & 15), usize::from(b >> 4)]).collect();
        for w in nib.windows(2) {
            p[w[0]][w[1]] += 1;
        }
    }
    let total: u64 = p.iter().flatten().sum();
    let mut h = 0.0;
    for ctx in &p {
        let t: u64 = ctx.iter().sum();
        for &c in ctx.iter().filter(|&&c| c > 0) {
            h -= c as f64 / total as f64 * (c as f64 / t as f64).log2();
        }
    }
    h
}

fn centre(a: Area, k: usize, n: usize) -> i64 {
    let (l, r) = a.slot(k, n);
    (l + r) / 2
}

fn plot(dir: &Path, name: &str, input: &Path) -> Vec<u8> {
    let out = dir.join(name);
    ok(&tetrad(&["stats", "--no-zstd", "--plot", out.to_str().unwrap()], &[input]));
    std::fs::read(&out).unwrap()
}

#[test]
fn png_bars_match_the_histogram_and_the_entropies() {
    let dir = tempfile::tempdir().unwrap();
    let f = fixture(dir.path(), false);
    let img = Image::decode(&plot(dir.path(), "chart.png", &f.path));
    assert_eq!((img.w, img.h), (plot::WIDTH, plot::HEIGHT));
    assert_eq!((img.w, img.h), (1200, 800));

    // Histogram: pooled counts of both tensors, computed here.
    let mut pooled = counts_a();
    for (k, c) in tetrad::synth::nibble_histogram(&f.b).iter().enumerate() {
        pooled[k] += c;
    }
    assert_eq!(pooled[12], 0);
    let max = *pooled.iter().max().unwrap();
    let heights: Vec<i64> =
        (0..16).map(|k| img.bar_height(HIST, centre(HIST, k, 16), colours::HIST_BAR)).collect();
    let tallest = *heights.iter().max().unwrap();
    assert!(tallest >= i64::from(HIST.h) * 2 / 5, "tallest bar {tallest} px");
    for (k, (&c, &h)) in pooled.iter().zip(&heights).enumerate() {
        let want = c as f64 / max as f64 * tallest as f64;
        assert!((h as f64 - want).abs() <= 1.0, "value {k}: bar {h} px, expected {want:.1}");
        if c > 0 {
            assert!(h > 0, "value {k} has no bar");
            // The bar is solid from its top to the axis except where a line crosses it, and
            // its slot's edges are gaps.
            let x = centre(HIST, k, 16);
            let n = img.rows_of(HIST, x, colours::HIST_BAR).len() as i64;
            assert!(n >= h - 2, "value {k}: {n} bar pixels of {h}");
            let (l, r) = HIST.slot(k, 16);
            assert_ne!(img.at(l, HIST.bottom() - 1), colours::HIST_BAR);
            assert_ne!(img.at(r - 1, HIST.bottom() - 1), colours::HIST_BAR);
        }
        // Above the bar: no bar colour anywhere in the slot.
        let (l, r) = HIST.slot(k, 16);
        assert!(!img.has((l, r), (HIST.y, HIST.bottom() - h), colours::HIST_BAR), "value {k}");
    }
    assert_eq!(heights[12], 0, "value 12 never occurs: no bar");
    // The uniform share (1/16) is a dashed line across the panel, at its height.
    let total: u64 = pooled.iter().sum();
    let uniform = (1.0 / 16.0) / (max as f64 / total as f64) * tallest as f64;
    let rows: Vec<i64> = (HIST.y..HIST.bottom())
        .filter(|&y| (HIST.x..HIST.right()).any(|x| img.at(x, y) == colours::UNIFORM))
        .collect();
    assert!(!rows.is_empty(), "no uniform line");
    let mid = (rows[0] + rows[rows.len() - 1]) as f64 / 2.0;
    assert!((HIST.bottom() as f64 - mid - uniform).abs() <= 2.0, "uniform line at {mid}");

    // Per tensor: H0 bars and H1 marks on a 0..4 bit axis.
    for (i, (data, row_bytes)) in [(&f.a, 41usize), (&f.b, 32)].into_iter().enumerate() {
        let x = centre(TENSORS, i, 2);
        let h0 = entropy(&tetrad::synth::nibble_histogram(data));
        let want = (h0 / 4.0 * f64::from(TENSORS.h)).round() as i64;
        let got = img.bar_height(TENSORS, x, colours::H0_BAR);
        assert!((got - want).abs() <= 1, "tensor {i}: H0 {h0:.4} bar {got} px, expected {want}");
        let h1 = entropy1(data, row_bytes);
        let marks = img.rows_of(TENSORS, x, colours::H1_MARK);
        assert!(!marks.is_empty(), "tensor {i}: no H1 mark");
        let at = TENSORS.bottom() as f64 - (marks[0] + marks[marks.len() - 1]) as f64 / 2.0;
        let want = h1 / 4.0 * f64::from(TENSORS.h);
        assert!((at - want).abs() <= 2.0, "tensor {i}: H1 {h1:.4} mark at {at}, want {want:.1}");
    }
    assert!(entropy(&tetrad::synth::nibble_histogram(&f.b)) < 2.0 + 1e-9, "b uses 4 values");

    // Legends (the row above each panel) show every series' colour; tick labels are inked.
    let legend = |a: Area| (a.y - 34, a.y - 18);
    let whole = (0, i64::from(img.w));
    assert!(img.has(whole, legend(HIST), colours::HIST_BAR));
    assert!(img.has(whole, legend(HIST), colours::UNIFORM));
    for c in [colours::H0_BAR, colours::H1_MARK, colours::RAW_WIDTH] {
        assert!(img.has(whole, legend(TENSORS), c), "legend lacks {c:?}");
    }
    for k in 0..16 {
        let x = centre(HIST, k, 16);
        let band = (HIST.bottom() + 10, HIST.bottom() + 24);
        assert!(img.has((x - 12, x + 12), band, colours::TEXT), "no label under value {k}");
    }
    // The y axis of the bottom panel has labels 0..4; the footer says what the codes allow.
    assert!(img.has((0, TENSORS.x), (TENSORS.y - 8, TENSORS.bottom() + 8), colours::TEXT));
    assert!(img.has(whole, (735, 785), colours::TEXT));
}

#[test]
fn png_is_deterministic_atomic_and_the_same_chart_as_the_svg() {
    let dir = tempfile::tempdir().unwrap();
    let f = fixture(dir.path(), false);
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let first = plot(&out, "c.png", &f.path);
    let again = {
        // Overwrites in place: an existing chart is replaced only with --force.
        let p = out.join("c.png");
        ok(&tetrad(&["stats", "--no-zstd", "--force", "--plot", p.to_str().unwrap()], &[&f.path]));
        std::fs::read(&p).unwrap()
    };
    assert_eq!(first, again, "same input, same bytes");
    assert_eq!(plot(&out, "upper.PNG", &f.path), first, "extension case does not matter");
    let names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(sorted, ["c.png", "upper.PNG"], "no temporary file left: {names:?}");
    assert_eq!(&first[..8], b"\x89PNG\r\n\x1a\n");

    // The SVG is drawn from the same layout: each histogram bar's rectangle is where the PNG
    // has it.
    let svg = String::from_utf8(plot(&out, "c.svg", &f.path)).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert_eq!(plot(&out, "c2.svg", &f.path), svg.as_bytes());
    let img = Image::decode(&first);
    let re = regex::Regex::new(
        r##"<rect x="(\d+)" y="(\d+)" width="(\d+)" height="(\d+)" fill="#4472c4"><title>value (\d+): (\d+) "##,
    )
    .unwrap();
    let bars: Vec<_> = re.captures_iter(&svg).collect();
    assert_eq!(bars.len(), 16, "one rectangle per nibble value");
    for c in bars {
        let n = |i: usize| c[i].parse::<i64>().unwrap();
        let (x, y, w, h, k) = (n(1), n(2), n(3), n(4), n(5));
        assert_eq!(y + h, HIST.bottom());
        assert_eq!(img.bar_height(HIST, x + w / 2, colours::HIST_BAR), h, "value {k}");
        let (l, r) = HIST.slot(k as usize, 16);
        assert_eq!((x, w), (l + (r - l) / 8, r - l - 2 * ((r - l) / 8)), "value {k}: its slot");
        if k == 12 {
            assert_eq!((h, n(6)), (0, 0));
        }
    }
    assert_eq!(svg.matches("<title>x.").count(), 2, "a hover title per tensor bar");
    assert!(svg.contains(">bits/weight</text>"));
}

#[test]
fn byte_streams_put_the_tensor_axis_at_8_bits() {
    let dir = tempfile::tempdir().unwrap();
    let f = fixture(dir.path(), true);
    let img = Image::decode(&plot(dir.path(), "b.png", &f.path));
    // Tensor 2 is the int8-row one: its H0 over bytes, on a 0..8 bit axis.
    let c: Vec<u8> = (0..4 * 64u32).map(|k| (k * 37 % 251) as u8).collect();
    let mut hist = [0u64; 256];
    c.iter().for_each(|&b| hist[usize::from(b)] += 1);
    let h0 = entropy(&hist);
    let want = (h0 / 8.0 * f64::from(TENSORS.h)).round() as i64;
    let got = img.bar_height(TENSORS, centre(TENSORS, 2, 3), colours::H0_BAR);
    assert!((got - want).abs() <= 1, "byte tensor: {got} px, expected {want}");
    let h0a = entropy(&counts_a());
    let want = (h0a / 8.0 * f64::from(TENSORS.h)).round() as i64;
    let got = img.bar_height(TENSORS, centre(TENSORS, 0, 3), colours::H0_BAR);
    assert!((got - want).abs() <= 1, "nibble tensor on the 8-bit axis: {got} px, want {want}");
    // Both raw widths (4 and 8 bits) are drawn.
    let x = TENSORS.x + 3;
    let rows = img.rows_of(TENSORS, x, colours::RAW_WIDTH);
    let half = TENSORS.bottom() - i64::from(TENSORS.h) / 2;
    assert!(rows.iter().any(|&y| (y - half).abs() <= 1), "no 4-bit line: {rows:?}");
    assert!(rows.iter().any(|&y| y <= TENSORS.y + 1), "no 8-bit line: {rows:?}");
}

#[test]
fn nothing_measured_still_gives_a_valid_chart() {
    let dir = tempfile::tempdir().unwrap();
    let data = vec![0u8; 16];
    let t = [OutTensor { name: "norm", dtype: "F32", shape: &[4], data: &data }];
    let path = dir.path().join("n.safetensors");
    std::fs::write(&path, shard_bytes(&BTreeMap::new(), &t, HeaderStyle::EscapedUnpadded).unwrap())
        .unwrap();
    let img = Image::decode(&plot(dir.path(), "n.png", &path));
    assert_eq!((img.w, img.h), (plot::WIDTH, plot::HEIGHT));
    assert!(img.has((0, 1200), (0, 40), colours::TEXT), "the chart says why it is empty");
    assert!(!img.has((0, 1200), (0, 800), colours::HIST_BAR));
    assert!(!img.has((0, 1200), (TENSORS.y, TENSORS.bottom()), colours::H0_BAR));
}

#[test]
fn unknown_plot_extension_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let f = fixture(dir.path(), false);
    for name in ["chart.jpg", "chart", "chart.png.tmp", "chart."] {
        let out = dir.path().join(name);
        let o = tetrad(&["stats", "--plot", out.to_str().unwrap()], &[&f.path]);
        assert_eq!(o.status.code(), Some(2), "{name}: exit status");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(".png") && err.contains(".svg"), "{name}: {err}");
        assert!(err.contains(name), "{name}: the message names the file: {err}");
        assert!(o.stdout.is_empty(), "{name}: nothing measured or printed");
        assert!(!out.exists(), "{name}: no file written");
    }
}
