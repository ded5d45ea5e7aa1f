//! Media shared by the in-process and the end-to-end media tests: a photo's
//! bytes, and the hash relay gives a file.

use sha2::Digest;

pub fn jpeg() -> Vec<u8> {
    let mut bytes = b"\xFF\xD8\xFF\xE0\x00\x10JFIF\x00\x01\x01".to_vec();
    bytes.resize(2_000, 7);
    bytes
}

/// SHA-256 of `bytes`, hex, as the outbox and the transcript give it.
pub fn sent_sha(bytes: &[u8]) -> String {
    hex(&sha2::Sha256::digest(bytes))
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
