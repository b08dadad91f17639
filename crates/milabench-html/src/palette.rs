//! Series styles that stay apart for colour-blind readers and on a greyscale print: the
//! Okabe–Ito colours, each series also with its own marker shape.

/// The Okabe–Ito palette (Okabe and Ito, "Color Universal Design"), ordered so that the first
/// colours contrast most on white: blue, orange, bluish green, vermillion, reddish purple, sky
/// blue, black, yellow.
pub const OKABE_ITO: [(u8, u8, u8); 8] = [
    (0x00, 0x72, 0xB2),
    (0xE6, 0x9F, 0x00),
    (0x00, 0x9E, 0x73),
    (0xD5, 0x5E, 0x00),
    (0xCC, 0x79, 0xA7),
    (0x56, 0xB4, 0xE9),
    (0x00, 0x00, 0x00),
    (0xF0, 0xE4, 0x42),
];

/// A marker shape drawn along a series (the shape, not the colour, tells series apart in grey).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    /// An open circle.
    Circle,
    /// An open triangle.
    Triangle,
    /// A cross.
    Cross,
    /// An open square.
    Square,
    /// A filled circle.
    Dot,
    /// A filled square.
    Block,
}

/// The marker shapes, in the order series take them.
pub const MARKERS: [Marker; 6] = [
    Marker::Circle,
    Marker::Triangle,
    Marker::Cross,
    Marker::Square,
    Marker::Dot,
    Marker::Block,
];

/// The colour and marker of one series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeriesStyle {
    /// Red, green, blue.
    pub colour: (u8, u8, u8),
    /// Marker shape.
    pub marker: Marker,
}

impl SeriesStyle {
    /// The style of the `index`-th series of a plot: neighbouring series differ in both colour
    /// and marker, and no two of the first 48 share both.
    pub fn nth(index: usize) -> SeriesStyle {
        let colours = OKABE_ITO.len();
        let (round, colour) = (index / colours, index % colours);
        SeriesStyle {
            colour: OKABE_ITO[colour],
            // Each round of colours shifts the markers back by one.
            marker: MARKERS[(colour + 5 * round) % MARKERS.len()],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neighbouring_series_differ_in_colour_and_marker() {
        for i in 0..60 {
            let (a, b) = (SeriesStyle::nth(i), SeriesStyle::nth(i + 1));
            assert_ne!(a.colour, b.colour, "{i}");
            assert_ne!(a.marker, b.marker, "{i}");
        }
        let pairs: std::collections::HashSet<_> = (0..48)
            .map(|i| {
                let s = SeriesStyle::nth(i);
                (s.colour, s.marker as u8)
            })
            .collect();
        assert_eq!(pairs.len(), 48);
    }
}
