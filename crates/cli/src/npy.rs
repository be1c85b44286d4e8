//! `.npy` files (NumPy format) for every `--out` of the CLI, through the `npyz` crate: values
//! are streamed to the file (no second copy of the array in memory), little-endian, C order.

use anyhow::{Context, Result, bail};
use npyz::WriterBuilder;
use std::io::{BufWriter, Write};
use std::path::Path;

/// Writes `data` (`shape`'s product of values, C order) to `path` as `.npy` in `T`'s dtype
/// (`<f4` for f32, `<f8` for f64).
pub fn write<T: npyz::AutoSerialize>(path: &Path, shape: &[usize], data: impl IntoIterator<Item = T>) -> Result<()> {
    let shape64: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
    let file = std::fs::File::create(path).with_context(|| format!("writing {}", path.display()))?;
    let mut buf = BufWriter::new(file);
    let mut w = npyz::WriteOptions::new()
        .default_dtype()
        .shape(&shape64)
        .writer(&mut buf)
        .begin_nd()
        .with_context(|| format!("writing {}", path.display()))?;
    let want = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    let mut count = 0usize;
    for v in data {
        w.push(&v).with_context(|| format!("writing {}", path.display()))?;
        count += 1;
    }
    if Some(count) != want {
        bail!("{}: shape {shape:?} does not hold {count} values", path.display());
    }
    w.finish().with_context(|| format!("writing {}", path.display()))?;
    buf.flush().with_context(|| format!("writing {}", path.display()))?;
    Ok(())
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
        let bytes = std::fs::read(&p32).unwrap();
        assert_eq!(&bytes[..6], b"\x93NUMPY");
        let hlen = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
        assert_eq!((10 + hlen) % 64, 0, "header padded to 64 bytes");
        assert!(std::str::from_utf8(&bytes[10..10 + hlen]).unwrap().contains("'<f4'"));

        let p64 = dir.join("b.npy");
        let v64 = vec![1.0f64, -0.0, 1e-300, 2.5e300, std::f64::consts::PI];
        write(&p64, &[5], v64.iter().copied()).unwrap();
        let (shape, back) = read::<f64>(&p64).unwrap();
        assert_eq!(shape, [5]);
        assert!(back.iter().zip(&v64).all(|(a, b)| a.to_bits() == b.to_bits()));

        assert!(write(&dir.join("c.npy"), &[2, 2], [1.0f64, 2.0, 3.0]).is_err(), "wrong count refused");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
