//! Reads the RDB primitives an object is made of: lengths, strings (plain, integer-encoded
//! or LZF-compressed), doubles and millisecond times. Every read is bounds-checked and a
//! length never becomes an allocation larger than the input could fill.

use alloc::vec::Vec;

use crate::rdb::{Error, lzf};

/// A cursor over a payload's bytes.
pub struct Reader<'a> {
    buf: &'a [u8],
}

/// A length, or a string stored another way (an integer, LZF).
enum Len {
    Plain(u64),
    Int8,
    Int16,
    Int32,
    Lzf,
}

const TRUNCATED: Error = Error::BadData("truncated");

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf }
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Bytes not read yet: what any count read from here can at most describe.
    pub fn remaining(&self) -> usize {
        self.buf.len()
    }

    pub fn take(&mut self, n: usize) -> Result<&'a [u8], Error> {
        if self.buf.len() < n {
            return Err(TRUNCATED);
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], Error> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }

    pub fn byte(&mut self) -> Result<u8, Error> {
        Ok(self.take(1)?[0])
    }

    fn any_len(&mut self) -> Result<Len, Error> {
        let first = self.byte()?;
        Ok(match first >> 6 {
            0 => Len::Plain((first & 0x3f) as u64),
            1 => Len::Plain(((first & 0x3f) as u64) << 8 | self.byte()? as u64),
            2 => match first {
                0x80 => Len::Plain(u32::from_be_bytes(self.array()?) as u64),
                0x81 => Len::Plain(u64::from_be_bytes(self.array()?)),
                _ => return Err(Error::BadData("unknown length encoding")),
            },
            _ => match first & 0x3f {
                0 => Len::Int8,
                1 => Len::Int16,
                2 => Len::Int32,
                3 => Len::Lzf,
                _ => return Err(Error::BadData("unknown string encoding")),
            },
        })
    }

    /// A length as Redis writes it (`rdbLoadLen`): a full u64 (stream ids and counters).
    pub fn len(&mut self) -> Result<u64, Error> {
        match self.any_len()? {
            Len::Plain(n) => Ok(n),
            _ => Err(Error::BadData("encoded value where a length belongs")),
        }
    }

    /// A count of things that each take at least `min_bytes` of what follows: refused when
    /// the rest of the input could not hold that many, so a corrupt count never sizes an
    /// allocation or a loop beyond the payload.
    pub fn count(&mut self, min_bytes: usize) -> Result<usize, Error> {
        let n = self.len()?;
        if n > (self.remaining() / min_bytes.max(1)) as u64 {
            return Err(Error::BadData("count larger than the payload"));
        }
        Ok(n as usize)
    }

    /// A string in any of Redis's encodings.
    pub fn string(&mut self) -> Result<Vec<u8>, Error> {
        let int = |v: i64| crate::util::int_bytes(v);
        match self.any_len()? {
            Len::Plain(n) => {
                let n = usize::try_from(n).map_err(|_| TRUNCATED)?;
                Ok(self.take(n)?.to_vec())
            }
            Len::Int8 => Ok(int(self.byte()? as i8 as i64)),
            Len::Int16 => Ok(int(i16::from_le_bytes(self.array()?) as i64)),
            Len::Int32 => Ok(int(i32::from_le_bytes(self.array()?) as i64)),
            Len::Lzf => {
                let compressed = self.len()?;
                let len = self.len()?;
                let data = self.take(usize::try_from(compressed).map_err(|_| TRUNCATED)?)?;
                lzf::decompress(data, len)
            }
        }
    }

    /// A double as RDB_TYPE_ZSET_2 stores it: 8 bytes, little-endian.
    pub fn binary_double(&mut self) -> Result<f64, Error> {
        Ok(f64::from_le_bytes(self.array()?))
    }

    /// A double as the old RDB_TYPE_ZSET stores it (`rdbLoadDoubleValue`): a length byte
    /// with 253/254/255 for NaN/+inf/-inf, else that many bytes of text.
    pub fn text_double(&mut self) -> Result<f64, Error> {
        match self.byte()? {
            253 => Ok(f64::NAN),
            254 => Ok(f64::INFINITY),
            255 => Ok(f64::NEG_INFINITY),
            n => {
                let text = self.take(n as usize)?;
                crate::util::parse_f64(text).ok_or(Error::BadData("malformed double"))
            }
        }
    }

    /// A time in unix milliseconds (`rdbLoadMillisecondTime`): i64, little-endian.
    pub fn ms_time(&mut self) -> Result<i64, Error> {
        Ok(i64::from_le_bytes(self.array()?))
    }
}
