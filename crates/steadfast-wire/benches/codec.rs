//! Throughput of the hot path: encoding an insert with a document sequence and decoding a
//! `find` reply, plain and compressed, with deep and framing-only BSON validation.
//!
//! `cargo bench -p steadfast-wire --bench codec`
#![allow(
    clippy::disallowed_methods,
    reason = "benchmarks drive the clock, tasks and randomness themselves"
)]
#![allow(missing_docs)]

use bson::{RawDocumentBuf, rawdoc};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use steadfast_wire::{
    BsonValidation, Compressor, DEFAULT_MAX_MESSAGE_SIZE, DocumentSequence, Message, OpMsg,
};

const MAX: usize = DEFAULT_MAX_MESSAGE_SIZE;

fn document(i: i32) -> RawDocumentBuf {
    rawdoc! {
        "_id": i,
        "name": format!("customer number {i}"),
        "email": format!("customer{i}@example.invalid"),
        "balance": f64::from(i) * 1.25,
        "tags": ["alpha", "beta", "gamma"],
        "address": { "street": "1 Main Street", "city": "Springfield", "zip": "12345" },
    }
}

fn insert(count: i32) -> Message {
    let msg = OpMsg::new(rawdoc! { "insert": "customers", "ordered": true, "$db": "bench" })
        .with_sequence(DocumentSequence::new(
            "documents",
            (0..count).map(document).collect(),
        ));
    Message::new(1, 0, msg)
}

fn find_reply(count: i32) -> Message {
    let mut batch = bson::RawArrayBuf::new();
    for i in 0..count {
        batch.push(document(i));
    }
    let body = rawdoc! {
        "cursor": { "firstBatch": batch, "id": 0_i64, "ns": "bench.customers" },
        "ok": 1.0,
    };
    Message::new(2, 1, OpMsg::new(body))
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("wire");
    for count in [1, 100] {
        let message = insert(count);
        let size = message.encoded_len();
        group.throughput(Throughput::Bytes(size as u64));
        let mut out = Vec::with_capacity(size);
        group.bench_function(format!("encode_insert_{count}"), |b| {
            b.iter(|| {
                out.clear();
                black_box(&message)
                    .encode(None, MAX, &mut out)
                    .expect("encodes");
                black_box(out.len())
            })
        });

        let reply = find_reply(count);
        let bytes = reply.to_bytes(None, MAX).expect("encodes");
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        for (name, validation) in [
            ("deep", BsonValidation::Deep),
            ("framing", BsonValidation::Framing),
        ] {
            group.bench_function(format!("decode_reply_{count}_{name}"), |b| {
                b.iter(|| {
                    Message::decode_with(black_box(&bytes), MAX, validation).expect("decodes")
                })
            });
        }
        for compressor in [
            Compressor::Snappy,
            Compressor::Zlib { level: None },
            Compressor::Zstd { level: None },
        ] {
            let compressed = reply.to_bytes(Some(&compressor), MAX).expect("encodes");
            group.bench_function(format!("decode_reply_{count}_{}", compressor.name()), |b| {
                b.iter(|| Message::decode(black_box(&compressed), MAX).expect("decodes"))
            });
        }
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(std::time::Duration::from_millis(300))
        .measurement_time(std::time::Duration::from_secs(1));
    targets = bench
}
criterion_main!(benches);
