#![allow(missing_docs, clippy::print_stdout)]
use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::fmt;
use std::io::BufRead;

#[derive(Default, Debug, Clone, Copy)]
struct Num(Option<f64>);
impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Num;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("num")
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Num, E> {
                Ok(Num(Some(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Num, E> {
                Ok(Num(Some(v as f64)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Num, E> {
                Ok(Num(Some(v as f64)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Num, E> {
                Ok(Num(match v {
                    "NaN" => Some(f64::NAN),
                    _ => None,
                }))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Num, E> {
                Ok(Num(None))
            }
            fn visit_bool<E: de::Error>(self, _v: bool) -> Result<Num, E> {
                Ok(Num(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Num, A::Error> {
                while s.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Num(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Num, A::Error> {
                while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Num(None))
            }
        }
        d.deserialize_any(V)
    }
}
#[derive(Deserialize, Default, Debug)]
#[serde(default)]
struct Gpu {
    memory: Option<(Num, Num)>,
    load: Num,
    power: Num,
}
#[derive(Deserialize, Default, Debug)]
#[serde(default)]
struct Cpu {
    memory: Option<(Num, Num)>,
}
#[derive(Deserialize, Default, Debug)]
#[serde(default)]
struct DataLite<'a> {
    #[serde(borrow)]
    task: Option<Cow<'a, str>>,
    rate: Num,
    loss: Num,
    time: Num,
    #[serde(borrow)]
    gpudata: Option<indexmap::IndexMap<Cow<'a, str>, Gpu>>,
    cpudata: Option<Cpu>,
}
struct LineV;
impl<'de> Visitor<'de> for LineV {
    type Value = u64;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("line")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<u64, A::Error> {
        let mut name: Option<&'de str> = None;
        let mut n = 0;
        while let Some(k) = m.next_key::<&'de str>()? {
            match k {
                "event" => name = Some(m.next_value()?),
                "data" if name == Some("data") => {
                    let d: DataLite = m.next_value()?;
                    n += d.rate.0.is_some() as u64 + d.gpudata.map_or(0, |g| g.len() as u64);
                }
                _ => {
                    m.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(n)
    }
}
fn main() {
    let dir = std::env::args().nth(1).unwrap();
    let start = std::time::Instant::now();
    let mut lines = 0u64;
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let mut r = std::io::BufReader::with_capacity(65536, std::fs::File::open(p).unwrap());
        let mut buf = Vec::new();
        while r.read_until(b'\n', &mut buf).unwrap() > 0 {
            let s = std::str::from_utf8(&buf).unwrap();
            let mut de = serde_json::Deserializer::from_str(s);
            n += de.deserialize_map(LineV).unwrap();
            lines += 1;
            buf.clear();
        }
    }
    let t = start.elapsed().as_secs_f64();
    println!(
        "lite: {lines} lines in {t:.3}s = {:.0} lines/s ({n})",
        lines as f64 / t
    );
    let start = std::time::Instant::now();
    let mut recs = 0u64;
    for f in milabench_metrics::discover_data_files(&[std::path::Path::new(&dir)]).unwrap() {
        for item in f.records().unwrap() {
            if let milabench_metrics::ReadItem::Record(r) = item {
                std::hint::black_box(r);
                recs += 1;
            }
        }
    }
    let t = start.elapsed().as_secs_f64();
    println!("full: {recs} records in {t:.3}s = {:.0}/s", recs as f64 / t);
}
