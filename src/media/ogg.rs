//! How long an Ogg Opus or Ogg Vorbis file plays (a voice note from the
//! sandbox carries no length of its own): the granule position of its last
//! page, in samples, over the stream's rate. Only the first page and the
//! last 128 KiB are read, and any bytes at all give an answer or `None`,
//! never a panic.

use std::time::Duration;

/// The largest Ogg page: a 27-byte header, 255 lacing values, 255 × 255
/// bytes of body.
const MAX_PAGE: usize = 27 + 255 + 255 * 255;

/// How far from the end the last page is looked for.
const TAIL: usize = 2 * MAX_PAGE;

/// At most this many candidate pages have their checksum computed, so
/// bytes full of `OggS` cost little.
const MAX_CANDIDATES: usize = 16;

/// A page's header, when the bytes at `at` hold a whole one.
struct Page {
    granule: u64,
    serial: u32,
    /// Header and body.
    len: usize,
    body_at: usize,
}

fn page_at(b: &[u8], at: usize) -> Option<Page> {
    let header = b.get(at..at.checked_add(27)?)?;
    if &header[..4] != b"OggS" || header[4] != 0 {
        return None;
    }
    let granule = u64::from_le_bytes(header[6..14].try_into().ok()?);
    let serial = u32::from_le_bytes(header[14..18].try_into().ok()?);
    let segments = header[26] as usize;
    let lacing = b.get(at + 27..at + 27 + segments)?;
    let body_at = at + 27 + segments;
    let len = 27 + segments + lacing.iter().map(|&l| l as usize).sum::<usize>();
    (b.len() >= at + len).then_some(Page { granule, serial, len, body_at })
}

/// Ogg's CRC-32: polynomial 0x04C11DB7, not reflected, starting at 0, over
/// the page with its checksum field zeroed.
fn crc_ok(page: &[u8]) -> bool {
    let stored = u32::from_le_bytes([page[22], page[23], page[24], page[25]]);
    let mut crc = 0u32;
    for (i, &byte) in page.iter().enumerate() {
        let byte = if (22..26).contains(&i) { 0 } else { byte };
        crc ^= (byte as u32) << 24;
        for _ in 0..8 {
            crc = if crc & 0x8000_0000 != 0 { (crc << 1) ^ 0x04C1_1DB7 } else { crc << 1 };
        }
    }
    crc == stored
}

/// The stream's samples per second and the samples to skip at its start,
/// from its first page's header packet.
fn stream(b: &[u8]) -> Option<(Page, u64, u64)> {
    let first = page_at(b, 0)?;
    let head = &b[first.body_at..first.len];
    let u16_at = |i: usize| head.get(i..i + 2).map(|s| u16::from_le_bytes([s[0], s[1]]) as u64);
    let u32_at = |i: usize| head.get(i..i + 4).map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]) as u64);
    let (rate, pre_skip) = if head.starts_with(b"OpusHead") {
        // Opus granules always count at 48 kHz, whatever rate it was
        // recorded at.
        (48_000, u16_at(10)?)
    } else if head.starts_with(b"\x01vorbis") {
        (u32_at(12)?, 0)
    } else {
        return None;
    };
    (rate > 0).then_some((first, rate, pre_skip))
}

/// How long the file plays, if it is an Ogg Opus or Vorbis stream whose
/// last page can be found.
pub fn duration(b: &[u8]) -> Option<Duration> {
    let (first, rate, pre_skip) = stream(b)?;
    let from = b.len().saturating_sub(TAIL).max(1);
    let granule = (from..b.len().saturating_sub(26))
        .rev()
        .filter(|&at| b[at..].starts_with(b"OggS"))
        .filter_map(|at| page_at(b, at).map(|p| (at, p)))
        // -1 means no packet ends on the page; another stream's pages are
        // not this one's.
        .filter(|(_, p)| p.serial == first.serial && p.granule != u64::MAX)
        .take(MAX_CANDIDATES)
        .find(|(at, p)| crc_ok(&b[*at..*at + p.len]))
        .map(|(_, p)| p.granule)
        // A file of one page: its own granule (0 for a head page).
        .unwrap_or(first.granule);
    // A granule over 2^63 is negative: not a position.
    let samples = Some(granule).filter(|g| *g < 1 << 63)?.saturating_sub(pre_skip);
    let secs = samples / rate;
    let nanos = (samples % rate) as u128 * 1_000_000_000 / rate as u128;
    Some(Duration::new(secs, nanos as u32))
}

/// [`duration`] in whole seconds, rounded, and at least 1 for a file with
/// any sound: what a voice note's label shows.
pub fn seconds(b: &[u8]) -> Option<u32> {
    let d = duration(b)?;
    let rounded = d.as_secs() + u64::from(d.subsec_millis() >= 500);
    let at_least_one = if d.is_zero() { 0 } else { rounded.max(1) };
    Some(u32::try_from(at_least_one).unwrap_or(u32::MAX))
}

/// The comment a scripted voice note carries its words in.
const SPOKEN: &str = "RELAY_SPOKEN=";

/// A scripted voice note: a real Ogg Opus file of `seconds` (page structure,
/// checksums, length) with filler for sound and `words` in its comment
/// header, where [`spoken_words`] reads them back. The sandbox's and
/// `relay eval`'s scripted transcriber "hears" those words; nothing else
/// would hear anything. `words` up to 60,000 bytes (one Ogg packet).
pub fn scripted_voice_note(words: &str, seconds: u32) -> Vec<u8> {
    let comment = format!("{SPOKEN}{words}");
    let mut tags = b"OpusTags\x05\x00\x00\x00relay\x01\x00\x00\x00".to_vec();
    tags.extend_from_slice(&(comment.len() as u32).to_le_bytes());
    tags.extend_from_slice(comment.as_bytes());
    fixtures::opus_with_tags(u64::from(seconds) * 48_000 + 312, 312, &tags)
}

/// The words of a [`scripted_voice_note`], if `b` is one.
pub fn spoken_words(b: &[u8]) -> Option<String> {
    let at = b.windows(SPOKEN.len()).position(|w| w == SPOKEN.as_bytes())?;
    let len = u32::from_le_bytes(b.get(at.checked_sub(4)?..at)?.try_into().ok()?) as usize;
    let words = b.get(at + SPOKEN.len()..at.checked_add(len)?)?;
    String::from_utf8(words.to_vec()).ok()
}

pub(crate) mod fixtures {
    //! Ogg files built here: real page structure and checksums, packets of
    //! filler instead of sound (tests, and [`super::scripted_voice_note`]).

    /// One page of `packets` (each under 255 × 255 bytes).
    pub fn page(flags: u8, granule: u64, serial: u32, sequence: u32, packets: &[&[u8]]) -> Vec<u8> {
        let mut lacing = Vec::new();
        for packet in packets {
            lacing.extend(std::iter::repeat_n(255u8, packet.len() / 255));
            lacing.push((packet.len() % 255) as u8);
        }
        let mut b = b"OggS\x00".to_vec();
        b.push(flags);
        b.extend_from_slice(&granule.to_le_bytes());
        b.extend_from_slice(&serial.to_le_bytes());
        b.extend_from_slice(&sequence.to_le_bytes());
        b.extend_from_slice(&[0; 4]);
        b.push(lacing.len() as u8);
        b.extend_from_slice(&lacing);
        for packet in packets {
            b.extend_from_slice(packet);
        }
        let crc = crc(&b);
        b[22..26].copy_from_slice(&crc.to_le_bytes());
        b
    }

    fn crc(b: &[u8]) -> u32 {
        let mut crc = 0u32;
        for &byte in b {
            crc ^= (byte as u32) << 24;
            for _ in 0..8 {
                crc = if crc & 0x8000_0000 != 0 { (crc << 1) ^ 0x04C1_1DB7 } else { crc << 1 };
            }
        }
        crc
    }

    const SERIAL: u32 = 0x5EED_0001;

    /// An Ogg Opus voice note whose last page ends at `granule` (48 kHz
    /// samples), `pre_skip` samples of which are encoder delay.
    #[cfg(test)]
    pub fn ogg_opus(granule: u64, pre_skip: u16) -> Vec<u8> {
        opus_with_tags(granule, pre_skip, b"OpusTags\x05\x00\x00\x00relay\x00\x00\x00\x00")
    }

    /// [`ogg_opus`] with this comment header (`OpusTags` and what follows).
    pub fn opus_with_tags(granule: u64, pre_skip: u16, tags: &[u8]) -> Vec<u8> {
        let mut head = b"OpusHead\x01\x01".to_vec();
        head.extend_from_slice(&pre_skip.to_le_bytes());
        head.extend_from_slice(&16_000u32.to_le_bytes()); // the input rate: not the granule rate
        head.extend_from_slice(&[0, 0, 0]);
        [
            page(0x02, 0, SERIAL, 0, &[&head]),
            page(0x00, 0, SERIAL, 1, &[tags]),
            page(0x00, granule / 2, SERIAL, 2, &[&[0xFC; 300], &[0xFC; 80]]),
            // A page on which no packet ends: granule -1.
            page(0x00, u64::MAX, SERIAL, 3, &[&[0xFC; 255 * 3]]),
            page(0x04, granule, SERIAL, 4, &[&[0xFC; 120]]),
        ]
        .concat()
    }

    /// An Ogg Vorbis file at `rate` whose last page ends at `granule`.
    #[cfg(test)]
    pub fn ogg_vorbis(rate: u32, granule: u64) -> Vec<u8> {
        let mut head = b"\x01vorbis\x00\x00\x00\x00\x02".to_vec();
        head.extend_from_slice(&rate.to_le_bytes());
        head.extend_from_slice(&[0; 12]);
        head.extend_from_slice(&[0xB8, 0x01]);
        [
            page(0x02, 0, SERIAL, 0, &[&head]),
            page(0x00, 0, SERIAL, 1, &[b"\x03vorbis\x00\x00\x00\x00", b"\x05vorbis"]),
            page(0x04, granule, SERIAL, 2, &[&[0x55; 700]]),
        ]
        .concat()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::fixtures::*;
    use super::*;

    proptest! {
        /// A scripted voice note is an Ogg Opus file of its length whose
        /// words read back as written, whatever they are.
        #[test]
        fn a_scripted_voice_note_carries_its_words(words in "\\PC{0,300}", seconds in 1u32..600) {
            let note = scripted_voice_note(&words, seconds);
            prop_assert_eq!(crate::media::sniff::sniff(&note).mime, "audio/ogg; codecs=opus");
            prop_assert_eq!(super::seconds(&note), Some(seconds));
            prop_assert_eq!(spoken_words(&note), Some(words));
        }
    }

    #[test]
    fn an_opus_voice_note_lasts_its_last_granule_less_the_pre_skip() {
        let note = ogg_opus(12 * 48_000 + 312, 312);
        assert_eq!(duration(&note), Some(Duration::from_secs(12)));
        assert_eq!(seconds(&note), Some(12));
        assert_eq!(seconds(&ogg_opus(48_000 * 3 / 2, 0)), Some(2), "1.5 s rounds up");
        assert_eq!(seconds(&ogg_opus(48_000 * 14 / 10, 0)), Some(1), "1.4 s rounds down");
        assert_eq!(seconds(&ogg_opus(4_800, 0)), Some(1), "a tenth of a second is still a sound");
        assert_eq!(seconds(&ogg_opus(100, 312)), Some(0), "all of it pre-skip");
    }

    #[test]
    fn a_vorbis_file_lasts_its_last_granule_at_its_rate() {
        assert_eq!(duration(&ogg_vorbis(44_100, 44_100 * 3 + 22_050)), Some(Duration::from_millis(3_500)));
        assert_eq!(seconds(&ogg_vorbis(8_000, 8_000 * 75)), Some(75));
    }

    #[test]
    fn what_is_not_a_whole_ogg_stream_has_no_duration_or_the_last_whole_pages() {
        assert_eq!(duration(b""), None);
        assert_eq!(duration(b"OggS"), None);
        assert_eq!(duration(&crate::media::sniff::fixtures::jpeg()), None);
        // Another codec (here, nothing known) in an Ogg page.
        assert_eq!(duration(&page(0x02, 0, 1, 0, &[b"\x80theora"])), None);
        // A Vorbis header with rate 0.
        assert_eq!(duration(&ogg_vorbis(0, 1_000)), None);
        // Cut in the middle of the last page: the page before it counts.
        let note = ogg_opus(10 * 48_000, 0);
        assert_eq!(seconds(&note[..note.len() - 10]), Some(5));
        // Junk after the end, even junk that says OggS, does not count.
        let tail = [note.as_slice(), b"OggS\x00\x04\xff\xff\xff\xff\xff\xff\xff\x00junk"].concat();
        assert_eq!(seconds(&tail), Some(10));
        // A page with a broken checksum is skipped.
        let mut broken = note.clone();
        let last = broken.len() - 1;
        broken[last] ^= 1;
        assert_eq!(seconds(&broken), Some(5));
        // A negative granule is no position.
        let negative = ogg_opus(u64::MAX - 5, 0);
        assert_eq!(duration(&negative), None);
        // A long file: the last page is found from the end.
        let long =
            [&note[..note.len() - 130], &vec![0u8; 300_000], &page(0x04, 48_000 * 600, 0x5EED_0001, 9, &[&[1; 9]])]
                .concat();
        assert_eq!(seconds(&long), Some(600));
    }

    proptest! {
        /// Any bytes: an answer or none, never a panic.
        #[test]
        fn any_bytes_are_safe(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
            let _ = duration(&bytes);
            let _ = seconds(&bytes);
        }

        /// A real head page followed by anything: never a panic.
        #[test]
        fn a_real_head_then_anything_is_safe(
            vorbis in any::<bool>(),
            tail in proptest::collection::vec(any::<u8>(), 0..4096),
        ) {
            let file = if vorbis { ogg_vorbis(44_100, 1) } else { ogg_opus(1, 0) };
            let head_len = 27 + 1 + file[27] as usize;
            let bytes = [&file[..head_len], tail.as_slice()].concat();
            let _ = duration(&bytes);
        }

        /// Any byte of a real file changed: never a panic.
        #[test]
        fn a_changed_byte_is_safe(at in any::<prop::sample::Index>(), to in any::<u8>(), granule in any::<u64>()) {
            let mut file = ogg_opus(granule, 312);
            let at = at.index(file.len());
            file[at] = to;
            let _ = duration(&file);
        }

        /// A well-formed file gives exactly its granule less the pre-skip.
        #[test]
        fn the_duration_is_exact(granule in 0u64..(1 << 40), pre_skip in any::<u16>()) {
            let samples = granule.saturating_sub(pre_skip as u64);
            let expected = Duration::from_nanos((samples as u128 * 1_000_000_000 / 48_000) as u64);
            prop_assert_eq!(duration(&ogg_opus(granule, pre_skip)), Some(expected));
        }
    }
}
