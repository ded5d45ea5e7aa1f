//! The pairing QR code, drawn in the terminal with Unicode half-blocks: one
//! character holds two rows of modules, so a WhatsApp code (about 57 modules
//! plus its margin) fits an 80-column terminal.

use qrcode::{Color, EcLevel, QrCode};

/// Modules of light margin around the code (scanners need some; 2 keeps it small).
const MARGIN: usize = 2;

/// The code as lines of text. Light modules are drawn as blocks, so on the
/// usual dark terminal the code shows dark-on-light, as scanners expect.
pub fn render(data: &str) -> Result<Vec<String>, String> {
    let code = QrCode::with_error_correction_level(data.as_bytes(), EcLevel::L)
        .map_err(|e| format!("cannot draw the QR code: {e}"))?;
    let width = code.width();
    let colors = code.to_colors();
    let size = width + 2 * MARGIN;
    // Light (true) at (row, col), margin included.
    let light = |row: usize, col: usize| -> bool {
        if row < MARGIN || col < MARGIN || row >= width + MARGIN || col >= width + MARGIN {
            return true;
        }
        colors[(row - MARGIN) * width + (col - MARGIN)] == Color::Light
    };
    let mut lines = Vec::with_capacity(size.div_ceil(2));
    for top in (0..size).step_by(2) {
        let line = (0..size)
            .map(|col| {
                let upper = light(top, col);
                let lower = top + 1 < size && light(top + 1, col);
                match (upper, lower) {
                    (true, true) => '█',
                    (true, false) => '▀',
                    (false, true) => '▄',
                    (false, false) => ' ',
                }
            })
            .collect();
        lines.push(line);
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shape of a real pairing code: ref, three base64 keys, client type.
    const CODE: &str = "2@Xk9vQ3JkYnRzZ0pLbFhxV1ZtS2ZQcnVoYk5zT3VqZUxvR0pzZEtXZ2hBbFFyY0lKdXc9PQ==,\
        c2VjcmV0X25vaXNlX2tleV9iYXNlNjRfZW5jb2RlZD0=,aWRlbnRpdHlfa2V5X2Jhc2U2NF9lbmNvZGVkX3h5ej0=,\
        YWR2X3NlY3JldF9iYXNlNjRfZW5jb2RlZF9hYmNkZWY=,1";

    #[test]
    fn a_pairing_code_fits_an_80_column_terminal() {
        let lines = render(CODE).unwrap();
        let width = lines[0].chars().count();
        assert!(width <= 80, "{width} columns");
        assert!(lines.iter().all(|l| l.chars().count() == width));
        assert!(lines.len() <= 40, "{} rows", lines.len());
    }

    #[test]
    fn the_half_blocks_hold_exactly_the_codes_modules() {
        let lines = render(CODE).unwrap();
        let code = QrCode::with_error_correction_level(CODE.as_bytes(), EcLevel::L).unwrap();
        let (width, colors) = (code.width(), code.to_colors());
        // Read the modules back out of the characters.
        let mut read = Vec::new();
        for line in &lines {
            let (mut upper, mut lower) = (Vec::new(), Vec::new());
            for c in line.chars() {
                let (u, l) = match c {
                    '█' => (true, true),
                    '▀' => (true, false),
                    '▄' => (false, true),
                    ' ' => (false, false),
                    other => panic!("unexpected character {other:?}"),
                };
                upper.push(u);
                lower.push(l);
            }
            read.push(upper);
            read.push(lower);
        }
        for row in 0..width {
            for col in 0..width {
                let light = colors[row * width + col] == Color::Light;
                assert_eq!(read[row + MARGIN][col + MARGIN], light, "module ({row}, {col})");
            }
        }
        // The margin is light all round.
        assert!(read[0].iter().all(|l| *l));
        let size = width + 2 * MARGIN;
        assert!(read[..size].iter().all(|row| row[0] && row[MARGIN - 1] && row[size - 1]));
    }
}
