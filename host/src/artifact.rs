//! The shipped kernels: PTX and machine code built from `kernels/` by this
//! repository's `cargo xtask artifact`, compressed, and embedded in the
//! crate, so that users build on stable Rust with no CUDA toolkit.
//!
//! Each file is one zstd frame holding a container of modules:
//!
//! ```text
//! magic   b"GPKMOD01"
//! count   u32 LE
//! count times, sorted by key:
//!   key_len u32 LE, key (UTF-8)
//!   data_len u32 LE, data
//! ```
//!
//! A module holds the kernels of one group: an entry name less its
//! `_b<block>` suffix (`reduce_vectorized_sum_f32` holds
//! `reduce_vectorized_sum_f32_b32` .. `_b1024`). The CUDA backend loads a
//! group on first use, so a program that only sums `f32` JIT-compiles (or
//! loads the machine code of) a handful of kernels, not all of them.
//!
//! * `ptx.zst`: PTX for `sm_70` (`.version 7.0`), which the driver compiles
//!   for any GPU from Volta on.
//! * `sm_80.zst`, `sm_90.zst`: the same modules assembled by `ptxas` for
//!   compute capability 8.x and 9.0 (machine code runs on the minor
//!   versions at or above its own), so those GPUs skip the JIT.

use crate::error::{Error, Result};
use std::collections::HashMap;
use std::ops::Range;
use std::sync::OnceLock;

const MAGIC: &[u8; 8] = b"GPKMOD01";

/// A decompressed container: its bytes and where each module lies.
pub struct Archive {
    data: Vec<u8>,
    index: HashMap<String, Range<usize>>,
}

impl Archive {
    /// Decompress and index one container file.
    pub fn decode(file: &'static str, compressed: &[u8]) -> Result<Archive> {
        let bad = |reason: String| Error::Artifact { file, reason };
        let mut data = Vec::new();
        let mut decoder =
            ruzstd::decoding::StreamingDecoder::new(compressed).map_err(|e| bad(format!("not a zstd frame: {e}")))?;
        std::io::Read::read_to_end(&mut decoder, &mut data).map_err(|e| bad(format!("cannot decompress: {e}")))?;
        let index = parse(&data).map_err(bad)?;
        Ok(Archive { data, index })
    }

    /// The module of group `key`, if the container has it.
    pub fn module(&self, key: &str) -> Option<&[u8]> {
        self.index.get(key).map(|r| &self.data[r.clone()])
    }

    /// Every group key, in no particular order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.index.keys().map(String::as_str)
    }
}

fn parse(data: &[u8]) -> std::result::Result<HashMap<String, Range<usize>>, String> {
    let mut at = 0usize;
    let mut take = |n: usize| -> std::result::Result<Range<usize>, String> {
        let end = at.checked_add(n).filter(|&e| e <= data.len()).ok_or("truncated container")?;
        let r = at..end;
        at = end;
        Ok(r)
    };
    if data.get(take(8)?) != Some(&MAGIC[..]) {
        return Err("bad magic (not a gpuprim kernel container)".into());
    }
    let word = |r: Range<usize>| u32::from_le_bytes(data[r].try_into().expect("4 bytes")) as usize;
    let count = word(take(4)?);
    let mut index = HashMap::with_capacity(count);
    for _ in 0..count {
        let key_len = word(take(4)?);
        let key = std::str::from_utf8(&data[take(key_len)?]).map_err(|_| "module key is not UTF-8")?.to_string();
        let len = word(take(4)?);
        index.insert(key, take(len)?);
    }
    Ok(index)
}

/// The group a kernel entry belongs to: its name less a `_b<digits>` suffix.
pub fn group_of(name: &str) -> &str {
    match name.rsplit_once("_b") {
        Some((head, digits)) if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => head,
        _ => name,
    }
}

/// Which shipped image a kernel module comes as.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Image {
    /// PTX for `sm_70`, compiled by the driver at load time.
    Ptx,
    /// Machine code for compute capability 8.0 (runs on 8.x).
    Sm80,
    /// Machine code for compute capability 9.0.
    Sm90,
}

impl Image {
    /// The machine code that runs on compute capability `major.minor`, if
    /// one is shipped; `None` means PTX (set `GPUPRIM_FORCE_PTX=1` to
    /// force it, e.g. to measure the JIT).
    pub fn machine_code_for(major: i32, minor: i32) -> Option<Image> {
        if std::env::var("GPUPRIM_FORCE_PTX").as_deref() == Ok("1") {
            return None;
        }
        match (major, minor) {
            (8, _) => Some(Image::Sm80),
            (9, 0) => Some(Image::Sm90),
            _ => None,
        }
    }

    /// The file name inside the crate.
    pub fn file(self) -> &'static str {
        match self {
            Image::Ptx => "kernels/ptx.zst",
            Image::Sm80 => "kernels/sm_80.zst",
            Image::Sm90 => "kernels/sm_90.zst",
        }
    }

    fn compressed(self) -> &'static [u8] {
        match self {
            Image::Ptx => include_bytes!("../kernels/ptx.zst"),
            Image::Sm80 => include_bytes!("../kernels/sm_80.zst"),
            Image::Sm90 => include_bytes!("../kernels/sm_90.zst"),
        }
    }

    /// The decompressed container, decoded once per process.
    pub fn archive(self) -> Result<&'static Archive> {
        static PTX: OnceLock<std::result::Result<Archive, String>> = OnceLock::new();
        static SM80: OnceLock<std::result::Result<Archive, String>> = OnceLock::new();
        static SM90: OnceLock<std::result::Result<Archive, String>> = OnceLock::new();
        let cell = match self {
            Image::Ptx => &PTX,
            Image::Sm80 => &SM80,
            Image::Sm90 => &SM90,
        };
        cell.get_or_init(|| Archive::decode(self.file(), self.compressed()).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(|reason| Error::Artifact { file: self.file(), reason: reason.clone() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_strips_only_a_block_suffix() {
        assert_eq!(group_of("reduce_vectorized_sum_f32_b256"), "reduce_vectorized_sum_f32");
        assert_eq!(group_of("scan_clear_any"), "scan_clear_any");
        assert_eq!(group_of("x_bad_b"), "x_bad_b");
        assert_eq!(group_of("x_b12c"), "x_b12c");
    }

    #[test]
    fn every_shipped_image_decodes_with_the_same_groups() {
        let ptx = Image::Ptx.archive().unwrap();
        let mut keys: Vec<&str> = ptx.keys().collect();
        keys.sort_unstable();
        assert!(keys.iter().any(|k| k.starts_with("reduce_vectorized_sum_")), "{keys:?}");
        assert!(!keys.iter().any(|k| k.starts_with("testing_")), "test kernels must not ship");
        for image in [Image::Sm80, Image::Sm90] {
            let a = image.archive().unwrap();
            let mut other: Vec<&str> = a.keys().collect();
            other.sort_unstable();
            assert_eq!(keys, other, "{image:?}");
        }
        let text = std::str::from_utf8(ptx.module("reduce_vectorized_sum_f32").unwrap()).unwrap();
        assert!(text.contains(".target sm_70"), "shipped PTX must load on Volta");
    }

    #[test]
    fn a_damaged_container_is_an_error() {
        assert!(matches!(Archive::decode("x", b"not zstd"), Err(Error::Artifact { .. })));
        assert!(parse(b"GPKMOD01\x05\0\0\0").is_err());
        assert!(parse(b"GPKMOD02\0\0\0\0").is_err());
    }
}
