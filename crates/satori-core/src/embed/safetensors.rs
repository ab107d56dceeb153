//! A minimal reader of the safetensors format (an 8-byte little-endian header length, a JSON
//! header naming each tensor's dtype, shape and byte range, then the raw data): enough to
//! read the embedding matrix of a static model without a machine-learning framework.

use std::collections::BTreeMap;

use serde::Deserialize;

/// Element types a static embedding matrix may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dtype {
    F32,
    F16,
    BF16,
    I8,
    I64,
}

impl Dtype {
    fn parse(s: &str) -> Option<Dtype> {
        Some(match s {
            "F32" => Dtype::F32,
            "F16" => Dtype::F16,
            "BF16" => Dtype::BF16,
            "I8" => Dtype::I8,
            "I64" => Dtype::I64,
            _ => return None,
        })
    }

    fn size(self) -> usize {
        match self {
            Dtype::F32 => 4,
            Dtype::F16 | Dtype::BF16 => 2,
            Dtype::I8 => 1,
            Dtype::I64 => 8,
        }
    }
}

/// One tensor: its type, shape and raw little-endian bytes.
#[derive(Debug, Clone)]
pub struct Tensor<'a> {
    pub dtype: Dtype,
    pub shape: Vec<usize>,
    pub data: &'a [u8],
}

impl Tensor<'_> {
    /// The elements converted to `f32`, row-major.
    pub fn to_f32(&self) -> Vec<f32> {
        match self.dtype {
            Dtype::F32 => self
                .data
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
            Dtype::F16 => self
                .data
                .chunks_exact(2)
                .map(|b| f16_to_f32(u16::from_le_bytes([b[0], b[1]])))
                .collect(),
            Dtype::BF16 => self
                .data
                .chunks_exact(2)
                .map(|b| f32::from_bits(u32::from(u16::from_le_bytes([b[0], b[1]])) << 16))
                .collect(),
            Dtype::I8 => self.data.iter().map(|&b| f32::from(b as i8)).collect(),
            Dtype::I64 => self
                .data
                .chunks_exact(8)
                .map(|b| i64::from_le_bytes(b.try_into().unwrap_or([0; 8])) as f32)
                .collect(),
        }
    }

    /// The elements as `i64` (for index tensors); `None` for float tensors.
    pub fn to_i64(&self) -> Option<Vec<i64>> {
        match self.dtype {
            Dtype::I64 => Some(
                self.data
                    .chunks_exact(8)
                    .map(|b| i64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
                    .collect(),
            ),
            Dtype::I8 => Some(self.data.iter().map(|&b| i64::from(b as i8)).collect()),
            _ => None,
        }
    }
}

/// IEEE half precision to single precision (exact).
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h >> 15) << 31;
    let exp = u32::from((h >> 10) & 0x1f);
    let frac = u32::from(h & 0x3ff);
    let bits = match (exp, frac) {
        (0, 0) => sign,
        (0, f) => {
            // Subnormal: renormalize.
            let mut e = 127 - 15 + 1;
            let mut f = f;
            while f & 0x400 == 0 {
                f <<= 1;
                e -= 1;
            }
            sign | (e << 23) | ((f & 0x3ff) << 13)
        }
        (0x1f, f) => sign | 0x7f80_0000 | (f << 13),
        (e, f) => sign | ((e + 127 - 15) << 23) | (f << 13),
    };
    f32::from_bits(bits)
}

#[derive(Deserialize)]
struct Entry {
    dtype: String,
    shape: Vec<usize>,
    data_offsets: [usize; 2],
}

/// A parsed safetensors file borrowing its bytes.
#[derive(Debug)]
pub struct SafeTensors<'a> {
    tensors: BTreeMap<String, Tensor<'a>>,
}

/// Parse errors, as text (the caller adds which file it was).
pub type ParseError = String;

/// Upper bound of the JSON header; real headers are a few kilobytes.
const MAX_HEADER: usize = 100 * 1024 * 1024;

impl<'a> SafeTensors<'a> {
    /// Parses `bytes`, checking every tensor's range and size.
    pub fn parse(bytes: &'a [u8]) -> Result<SafeTensors<'a>, ParseError> {
        let len_bytes: [u8; 8] = bytes
            .get(..8)
            .and_then(|b| b.try_into().ok())
            .ok_or("file is shorter than a safetensors header")?;
        let header_len = usize::try_from(u64::from_le_bytes(len_bytes))
            .ok()
            .filter(|&n| n <= MAX_HEADER && 8 + n <= bytes.len())
            .ok_or("header length is out of range")?;
        let header: BTreeMap<String, serde_json::Value> =
            serde_json::from_slice(&bytes[8..8 + header_len])
                .map_err(|e| format!("header is not valid JSON: {e}"))?;
        let data = &bytes[8 + header_len..];
        let mut tensors = BTreeMap::new();
        for (name, value) in header {
            if name == "__metadata__" {
                continue;
            }
            let entry: Entry = serde_json::from_value(value)
                .map_err(|e| format!("tensor '{name}' has an invalid entry: {e}"))?;
            let dtype = Dtype::parse(&entry.dtype)
                .ok_or_else(|| format!("tensor '{name}' has unsupported dtype {}", entry.dtype))?;
            let [from, to] = entry.data_offsets;
            let count: usize = entry.shape.iter().product();
            if from > to || to > data.len() || to - from != count * dtype.size() {
                return Err(format!("tensor '{name}' has an inconsistent byte range"));
            }
            tensors.insert(
                name,
                Tensor {
                    dtype,
                    shape: entry.shape,
                    data: &data[from..to],
                },
            );
        }
        Ok(SafeTensors { tensors })
    }

    /// The tensor called `name`.
    pub fn get(&self, name: &str) -> Option<&Tensor<'a>> {
        self.tensors.get(name)
    }

    /// Names of all tensors, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.tensors.keys().map(String::as_str).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(header: &str, data: &[u8]) -> Vec<u8> {
        let mut v = (header.len() as u64).to_le_bytes().to_vec();
        v.extend_from_slice(header.as_bytes());
        v.extend_from_slice(data);
        v
    }

    #[test]
    fn reads_tensors_and_rejects_bad_ranges() {
        let data: Vec<u8> = [1.5f32, -2.0]
            .iter()
            .flat_map(|f| f.to_le_bytes())
            .collect();
        let ok = file(
            r#"{"e":{"dtype":"F32","shape":[1,2],"data_offsets":[0,8]},"__metadata__":{"a":"b"}}"#,
            &data,
        );
        let st = SafeTensors::parse(&ok).unwrap();
        assert_eq!(st.get("e").unwrap().to_f32(), vec![1.5, -2.0]);
        assert_eq!(st.names(), vec!["e"]);
        let bad = file(
            r#"{"e":{"dtype":"F32","shape":[1,3],"data_offsets":[0,8]}}"#,
            &data,
        );
        assert!(
            SafeTensors::parse(&bad)
                .unwrap_err()
                .contains("inconsistent")
        );
        assert!(SafeTensors::parse(b"abc").is_err());
    }

    #[test]
    fn half_precision_is_exact() {
        for (h, f) in [
            (0x3c00u16, 1.0f32),
            (0xc000, -2.0),
            (0x3555, 0.333_251_95),
            (0x0001, 5.960_464_5e-8),
            (0x7bff, 65504.0),
            (0x0000, 0.0),
        ] {
            assert_eq!(f16_to_f32(h), f, "{h:#x}");
        }
    }
}
