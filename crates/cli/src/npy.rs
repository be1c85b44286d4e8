//! `.npy` files (NumPy format version 1.0) for every `--out` of the CLI: the header byte for
//! byte as numpy's `np.save` writes it (numpy ≥ 1.24), then the values little-endian in C order.
//! That header is part of lockstep's stable output (README, "Stable outputs"): a file's bytes,
//! header included, are the same in every release of one stream version.
//!
//! Whole arrays are streamed to the file ([`write`], no second copy in memory); arrays made
//! piece by piece ([`Slabs`]: the bridge's chunks of paths) are written at their offsets, with
//! the same bytes. Either goes to `<path>.partial` and is renamed when complete
//! ([`crate::output::Partial`]).

use crate::output::Partial;
use anyhow::{Context, Result, bail};
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::Path;

/// Values the CLI writes: their numpy dtype and little-endian bytes.
pub trait Element: bytemuck::Pod + Send + Sync {
    /// numpy's `descr` (`<f4`, `<f8`).
    const DESCR: &'static str;
    /// Bytes per value.
    const SIZE: usize;
    /// Appends the value's little-endian bytes.
    fn put(self, out: &mut Vec<u8>);
}

impl Element for f32 {
    const DESCR: &'static str = "<f4";
    const SIZE: usize = 4;
    fn put(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
}

impl Element for f64 {
    const DESCR: &'static str = "<f8";
    const SIZE: usize = 8;
    fn put(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
}

/// numpy's `GROWTH_AXIS_MAX_DIGITS`: `np.save` pads the header with `21 − len(str(shape[0]))`
/// spaces so the first axis can grow in place.
const GROWTH_AXIS_MAX_DIGITS: usize = 21;

/// The header of a C-order array of dtype `descr` and `shape`, as numpy ≥ 1.24's `np.save`
/// writes it (format 1.0): magic `\x93NUMPY`, version 1.0, the header length (u16 LE), then
/// `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }`, the growth spaces, and spaces
/// and a newline up to a multiple of 64 bytes (64 more when it already is one, as numpy does).
/// Shapes print as Python tuples: `()`, `(5,)`, `(1000, 3, 200)`.
pub fn header(descr: &str, shape: &[u64]) -> Vec<u8> {
    let tuple = match shape {
        [] => "()".to_string(),
        [n] => format!("({n},)"),
        _ => format!("({})", shape.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")),
    };
    let mut text = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {tuple}, }}");
    if let Some(first) = shape.first() {
        text.push_str(&" ".repeat(GROWTH_AXIS_MAX_DIGITS - first.to_string().len()));
    }
    // numpy: hlen = len(text) + 1 (the newline); pad = 64 − (10 + hlen) mod 64 spaces.
    let hlen = text.len() + 1;
    let pad = 64 - (10 + hlen) % 64;
    let total = hlen + pad;
    let len = u16::try_from(total).expect("a header of a few dimensions fits format 1.0");
    let mut out = Vec::with_capacity(10 + total);
    out.extend_from_slice(b"\x93NUMPY\x01\x00");
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(text.as_bytes());
    out.extend(std::iter::repeat_n(b' ', pad));
    out.push(b'\n');
    out
}

/// The number of values of `shape`, or `None` past `u64`.
fn count(shape: &[u64]) -> Option<u64> {
    shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d))
}

/// The size of the `.npy` file of `shape` in `T`'s dtype: header and data (`None` past `u64`).
pub fn file_bytes<T: Element>(shape: &[u64]) -> Option<u64> {
    count(shape)?.checked_mul(T::SIZE as u64)?.checked_add(header(T::DESCR, shape).len() as u64)
}

/// Writes `data` (`shape`'s product of values, C order) to `path` as `.npy` in `T`'s dtype,
/// through `<path>.partial`. Errors when `data` holds another number of values (nothing is
/// written then).
pub fn write<T: Element>(path: &Path, shape: &[usize], data: impl IntoIterator<Item = T>) -> Result<()> {
    let shape64: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
    let mut partial = Partial::create(path)?;
    let ctx = || format!("writing {}", path.display());
    let mut n = 0u64;
    {
        let mut buf = BufWriter::with_capacity(1 << 20, partial.file());
        buf.write_all(&header(T::DESCR, &shape64)).with_context(ctx)?;
        let mut bytes = Vec::with_capacity(8);
        for v in data {
            bytes.clear();
            v.put(&mut bytes);
            buf.write_all(&bytes).with_context(ctx)?;
            n += 1;
        }
        buf.flush().with_context(ctx)?;
    }
    if Some(n) != count(&shape64) {
        bail!("{}: shape {shape:?} does not hold {n} values", path.display());
    }
    partial.commit()
}

/// A `.npy` file written piece by piece: its header first, then runs of consecutive values
/// (C order) at their offsets, in any order, from one thread. [`Slabs::commit`] makes it the
/// file once every value is written; dropped before, it leaves nothing.
pub struct Slabs<T: Element> {
    file: Partial,
    data_start: u64,
    len: u64,
    bytes: Vec<u8>,
    _values: std::marker::PhantomData<T>,
}

impl<T: Element> Slabs<T> {
    /// Starts `<path>.partial` with the header of `shape`.
    pub fn create(path: &Path, shape: &[u64]) -> Result<Slabs<T>> {
        let Some(len) = count(shape) else { bail!("{}: shape {shape:?} passes 2^64 values", path.display()) };
        let mut file = Partial::create(path)?;
        let h = header(T::DESCR, shape);
        file.file().write_all(&h).with_context(|| format!("writing {}", path.display()))?;
        Ok(Slabs { file, data_start: h.len() as u64, len, bytes: Vec::new(), _values: std::marker::PhantomData })
    }

    /// Joins `<path>.partial` of `shape`, which another process created with [`Slabs::create`]
    /// (a rank writing its own slabs of a run's one file): writes go to the same offsets; this
    /// side only [`Slabs::sync`]s, the creator commits.
    pub fn join(path: &Path, shape: &[u64]) -> Result<Slabs<T>> {
        let Some(len) = count(shape) else { bail!("{}: shape {shape:?} passes 2^64 values", path.display()) };
        let data_start = header(T::DESCR, shape).len() as u64;
        Ok(Slabs { file: Partial::join(path)?, data_start, len, bytes: Vec::new(), _values: std::marker::PhantomData })
    }

    /// Flushes the values written here to disk; the file stays `.partial`.
    pub fn sync(&mut self) -> Result<()> {
        self.file.sync()
    }

    /// Writes `values` as the values `index..index + values.len()` (C order).
    pub fn write_at(&mut self, index: u64, values: &[T]) -> Result<()> {
        if index.checked_add(values.len() as u64).is_none_or(|end| end > self.len) {
            bail!("values {index}..+{} are past the array's {} values", values.len(), self.len);
        }
        let at = self.data_start + index * T::SIZE as u64;
        let tmp = self.file.tmp().display().to_string();
        // On a little-endian machine the values' memory is their bytes; elsewhere, converted.
        let bytes: &[u8] = if cfg!(target_endian = "little") {
            bytemuck::cast_slice(values)
        } else {
            self.bytes.clear();
            values.iter().for_each(|v| v.put(&mut self.bytes));
            &self.bytes
        };
        let f = self.file.file();
        f.seek(SeekFrom::Start(at)).with_context(|| format!("writing {tmp}"))?;
        f.write_all(bytes).with_context(|| format!("writing {tmp}"))
    }

    /// Makes the file the target ([`Partial::commit`]). The caller has written every value.
    pub fn commit(mut self) -> Result<()> {
        let end = self.data_start + self.len * T::SIZE as u64;
        let size = self.file.file().metadata().map(|m| m.len()).unwrap_or(0);
        if size != end {
            bail!("{}: {size} bytes written, the array needs {end}", self.file.tmp().display());
        }
        self.file.commit()
    }
}

/// Reads a `.npy` file back: its shape and its values (tests; `T` must match the dtype).
#[cfg(test)]
pub fn read<T: npyz::Deserialize>(path: &Path) -> Result<(Vec<u64>, Vec<T>)> {
    let bytes = std::fs::read(path)?;
    let file = npyz::NpyFile::new(&bytes[..])?;
    let shape = file.shape().to_vec();
    Ok((shape, file.into_vec()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A numpy header: prefix, length, the dict text with `shape` and `spaces` spaces, newline.
    fn numpy(descr: &str, shape: &str, spaces: usize) -> Vec<u8> {
        let mut v = b"\x93NUMPY\x01\x00".to_vec();
        let text =
            format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}{}\n", " ".repeat(spaces));
        v.extend_from_slice(&(text.len() as u16).to_le_bytes());
        v.extend_from_slice(text.as_bytes());
        v
    }

    #[test]
    fn headers_are_numpys_bytes() {
        // From numpy 2.4.6 (io.BytesIO + np.lib.format.write_array_header_1_0): the shape's
        // tuple, the spaces after `}` (growth and alignment together) and the header's length.
        let cases: [(&str, &[u64], &str, usize, usize); 6] = [
            ("<f4", &[1000, 3, 200], "(1000, 3, 200)", 50, 128),
            ("<f8", &[5], "(5,)", 60, 128),
            ("<f8", &[11, 4096, 3], "(11, 4096, 3)", 51, 128),
            ("<f8", &[], "()", 62, 128),
            ("<f8", &[1_000_000_000_000, 3], "(1000000000000, 3)", 46, 128),
            // 10 + text + newline is a multiple of 64 already: numpy pads 64 more, not 0.
            (
                "<f8",
                &[7, 1_000_000_000_000_000_000, 100_000_000_000_000_000],
                "(7, 1000000000000000000, 100000000000000000)",
                84,
                192,
            ),
        ];
        for (descr, shape, tuple, spaces, len) in cases {
            let h = header(descr, shape);
            assert_eq!(h.len(), len, "{shape:?}");
            assert_eq!(h, numpy(descr, tuple, spaces), "{shape:?}: {}", String::from_utf8_lossy(&h));
        }
        // (1000, 3, 200) byte for byte as numpy wrote it.
        let full = header("<f4", &[1000, 3, 200]);
        let want = [
            b"\x93NUMPY\x01\x00v\x00".as_slice(),
            b"{'descr': '<f4', 'fortran_order': False, 'shape': (1000, 3, 200), }",
            &[b' '; 50],
            b"\n",
        ]
        .concat();
        assert_eq!(full, want);
    }

    #[test]
    fn writes_what_it_reads_back_in_both_precisions() {
        let dir = std::env::temp_dir().join(format!("lockstep-npy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p32 = dir.join("a.npy");
        let v32: Vec<f32> = (0..24).map(|i| i as f32 * 0.5 - 3.0).collect();
        write(&p32, &[2, 3, 4], v32.iter().copied()).unwrap();
        let (shape, back) = read::<f32>(&p32).unwrap();
        assert_eq!(shape, [2, 3, 4]);
        assert!(back.iter().zip(&v32).all(|(a, b)| a.to_bits() == b.to_bits()));
        assert!(!dir.join("a.npy.partial").exists());

        let p64 = dir.join("b.npy");
        let v64 = vec![1.0f64, -0.0, 1e-300, 2.5e300, std::f64::consts::PI];
        write(&p64, &[5], v64.iter().copied()).unwrap();
        let (shape, back) = read::<f64>(&p64).unwrap();
        assert_eq!(shape, [5]);
        assert!(back.iter().zip(&v64).all(|(a, b)| a.to_bits() == b.to_bits()));

        assert!(write(&dir.join("c.npy"), &[2, 2], [1.0f64, 2.0, 3.0]).is_err(), "wrong count refused");
        assert!(!dir.join("c.npy").exists() && !dir.join("c.npy.partial").exists(), "and nothing left");

        // Slabs in any order give the bytes of the whole write.
        let p = dir.join("d.npy");
        let mut s = Slabs::<f32>::create(&p, &[2, 3, 4]).unwrap();
        for (at, n) in [(20u64, 4usize), (0, 7), (7, 13)] {
            s.write_at(at, &v32[at as usize..at as usize + n]).unwrap();
        }
        assert!(s.write_at(22, &v32[..3]).is_err(), "past the end");
        s.commit().unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), std::fs::read(&p32).unwrap());
        let short = Slabs::<f32>::create(&dir.join("e.npy"), &[4]).unwrap();
        assert!(short.commit().is_err(), "a file with values missing is not committed");
        assert!(!dir.join("e.npy").exists() && !dir.join("e.npy.partial").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
