//! A small RGB raster: filled rectangles, axis-aligned (optionally dashed) lines and bitmap text.
//!
//! This is all a bar chart needs, and it is exact: every coordinate is an integer pixel, there
//! is no anti-aliasing and no floating point, so the same marks always give the same pixels
//! on every machine (the PNG bytes are deterministic) and a test can predict the colour of any
//! pixel. Every drawing call clips to the canvas, so marks that stick out (or lie wholly
//! outside, or have absurd sizes) are cut, never a panic or an out-of-bounds write.

use super::font;

/// An sRGB colour.
pub type Rgb = [u8; 3];

/// A `width × height` RGB image, row-major, top row first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Canvas {
    width: u32,
    height: u32,
    pixels: Vec<u8>,
}

impl Canvas {
    /// A canvas filled with `background` (the caller chooses sane sizes: it allocates
    /// `3 · width · height` bytes).
    pub fn new(width: u32, height: u32, background: Rgb) -> Self {
        let n = usize::try_from(u64::from(width) * u64::from(height)).unwrap_or(0);
        let pixels = background.iter().copied().cycle().take(n.saturating_mul(3)).collect();
        Self { width, height, pixels }
    }

    /// Width in pixels.
    pub fn width(&self) -> u32 {
        self.width
    }

    /// Height in pixels.
    pub fn height(&self) -> u32 {
        self.height
    }

    /// The pixels as `R G B` bytes, row-major (what PNG colour type 2 stores).
    pub fn rgb_bytes(&self) -> &[u8] {
        &self.pixels
    }

    /// The colour at (`x`, `y`), `None` outside the canvas.
    pub fn get(&self, x: i64, y: i64) -> Option<Rgb> {
        let i = self.index(x, y)?;
        Some([self.pixels[i], self.pixels[i + 1], self.pixels[i + 2]])
    }

    fn index(&self, x: i64, y: i64) -> Option<usize> {
        let x = u32::try_from(x).ok().filter(|&x| x < self.width)?;
        let y = u32::try_from(y).ok().filter(|&y| y < self.height)?;
        usize::try_from((u64::from(y) * u64::from(self.width) + u64::from(x)) * 3).ok()
    }

    /// Sets one pixel; outside the canvas it does nothing.
    pub fn set(&mut self, x: i64, y: i64, c: Rgb) {
        if let Some(i) = self.index(x, y) {
            self.pixels[i..i + 3].copy_from_slice(&c);
        }
    }

    /// Clips `[a, a + len)` to `[0, limit)`.
    fn clip(a: i64, len: u32, limit: u32) -> (i64, i64) {
        let lo = a.clamp(0, i64::from(limit));
        let hi = a.saturating_add(i64::from(len)).clamp(0, i64::from(limit));
        (lo, hi)
    }

    /// Fills the `w × h` rectangle whose top-left pixel is (`x`, `y`).
    pub fn fill_rect(&mut self, x: i64, y: i64, w: u32, h: u32, c: Rgb) {
        let (x0, x1) = Self::clip(x, w, self.width);
        let (y0, y1) = Self::clip(y, h, self.height);
        for yy in y0..y1 {
            for xx in x0..x1 {
                self.set(xx, yy, c);
            }
        }
    }

    /// A horizontal line of `len` pixels from (`x`, `y`) rightwards, `thick` pixels downwards;
    /// `dash = (on, off)` draws `on` pixels, skips `off`, repeating from `x` (`None`: solid).
    pub fn hline(
        &mut self,
        x: i64,
        y: i64,
        len: u32,
        thick: u32,
        dash: Option<(u32, u32)>,
        c: Rgb,
    ) {
        for k in 0..len {
            if dash.is_none_or(|(on, off)| k % (on + off).max(1) < on) {
                self.fill_rect(x.saturating_add(i64::from(k)), y, 1, thick, c);
            }
        }
    }

    /// A vertical line of `len` pixels from (`x`, `y`) downwards, `thick` pixels rightwards.
    pub fn vline(&mut self, x: i64, y: i64, len: u32, thick: u32, c: Rgb) {
        self.fill_rect(x, y, thick, len, c);
    }

    /// Draws `text` with its top-left corner at (`x`, `y`), each font pixel a `scale × scale`
    /// square (see [`font`]).
    pub fn text(&mut self, x: i64, y: i64, text: &str, scale: u32, c: Rgb) {
        let mut pen = x;
        for ch in text.chars() {
            let g = font::glyph(ch);
            for row in 0..font::GLYPH_H {
                for col in 0..font::GLYPH_W {
                    if font::ink(g, col, row) {
                        self.fill_rect(
                            pen.saturating_add(i64::from(col.saturating_mul(scale))),
                            y.saturating_add(i64::from(row.saturating_mul(scale))),
                            scale,
                            scale,
                            c,
                        );
                    }
                }
            }
            pen = pen.saturating_add(i64::from(font::ADVANCE.saturating_mul(scale)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: Rgb = [255, 255, 255];
    const K: Rgb = [0, 0, 0];

    fn inked(c: &Canvas) -> usize {
        c.rgb_bytes().chunks(3).filter(|p| *p != W).count()
    }

    #[test]
    fn rect_covers_exactly_its_pixels() {
        let mut c = Canvas::new(10, 8, W);
        c.fill_rect(2, 3, 4, 2, K);
        for y in 0..8 {
            for x in 0..10 {
                let inside = (2..6).contains(&x) && (3..5).contains(&y);
                assert_eq!(c.get(x, y), Some(if inside { K } else { W }), "({x}, {y})");
            }
        }
        assert_eq!(c.get(10, 0), None);
        assert_eq!(c.get(-1, 0), None);
    }

    #[test]
    fn everything_clips() {
        let mut c = Canvas::new(10, 8, W);
        c.fill_rect(-5, -5, 7, 7, K);
        assert_eq!(inked(&c), 4);
        c.fill_rect(i64::MAX, i64::MIN, u32::MAX, u32::MAX, K);
        c.fill_rect(i64::MIN, i64::MIN, u32::MAX, u32::MAX, K);
        assert_eq!(inked(&c), 4, "wholly outside: nothing drawn");
        c.fill_rect(-1_000_000, -5, u32::MAX, u32::MAX, K);
        assert_eq!(inked(&c), 80);
        let mut c = Canvas::new(10, 8, W);
        c.hline(i64::MAX - 3, 0, 100, 1, Some((0, 0)), K);
        c.text(i64::MAX, i64::MAX, "overflow", u32::MAX, K);
        c.text(-3, -3, "A", 1, K);
        assert!(inked(&c) > 0);
        let empty = Canvas::new(0, 0, W);
        assert!(empty.rgb_bytes().is_empty());
    }

    #[test]
    fn dashes_alternate() {
        let mut c = Canvas::new(12, 1, W);
        c.hline(0, 0, 12, 1, Some((3, 2)), K);
        let got: String = (0..12).map(|x| if c.get(x, 0) == Some(K) { '#' } else { '.' }).collect();
        assert_eq!(got, "###..###..##");
    }

    #[test]
    fn text_draws_the_glyphs_scaled() {
        let mut c = Canvas::new(30, 20, W);
        c.text(1, 1, "1", 2, K);
        let g = font::glyph('1');
        for row in 0..font::GLYPH_H {
            for col in 0..font::GLYPH_W {
                let want = if font::ink(g, col, row) { K } else { W };
                for (dx, dy) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
                    let (x, y) = (1 + 2 * i64::from(col) + dx, 1 + 2 * i64::from(row) + dy);
                    assert_eq!(c.get(x, y), Some(want), "({x}, {y})");
                }
            }
        }
    }
}
