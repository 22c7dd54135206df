//! `wo-db`: the integrated database engine (rows, indexes, the query engine and the
//! write-ahead log). It knows nothing of bytecode or script values; the VM converts at
//! the builtin boundary. Tables arrive in a later milestone; the crate exists now so the
//! dependency direction `wo-vm → wo-db` is fixed from the start.
