//! A data directory -> recovery and `wo db verify`. The input is
//! `[u32 LE wal length][wal][checkpoint]` (`wo_fuzz::split_datadir`); every CRC is
//! re-sealed after mutation so the decoders behind them are reached. The files live
//! in the in-memory `SimStorage`. Whatever `open` accepts must also survive a
//! checkpoint and reopen.
#![no_main]
use std::path::Path;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use wo_db::durable::{self, Options, SimStorage};

fn options(storage: &SimStorage) -> Options {
    Options {
        storage: Arc::new(storage.clone()),
        auto_checkpoint: false,
        preallocate: 0,
        pid: 1,
        ..Options::default()
    }
}

fuzz_target!(|data: &[u8]| {
    let (wal, ckpt) = wo_fuzz::split_datadir(data);
    let (mut wal, mut ckpt) = (wal.to_vec(), ckpt.to_vec());
    wo_fuzz::reseal_wal(&mut wal);
    wo_fuzz::reseal_checkpoint(&mut ckpt);
    let storage = SimStorage::new();
    let dir = Path::new("/d");
    storage.write_file(&dir.join("lock"), b"");
    if !wal.is_empty() {
        storage.write_file(&dir.join("wal"), &wal);
    }
    if !ckpt.is_empty() {
        storage.write_file(&dir.join("checkpoint"), &ckpt);
    }
    let _ = durable::verify_with(&storage, dir);
    let Ok(schema) = durable::stored_schema(dir, &options(&storage)) else {
        return;
    };
    let Ok((mut data_dir, db)) = durable::open(dir, schema.clone(), options(&storage)) else {
        return;
    };
    let checkpointed = data_dir.checkpoint(&db).is_ok();
    drop(data_dir);
    if checkpointed {
        if let Err(e) = durable::open(dir, schema, options(&storage)) {
            panic!("a checkpoint of a recovered directory does not open: {e}");
        }
        let rep = durable::verify_with(&storage, dir).expect("verify after checkpoint");
        let _ = rep;
    }
});
