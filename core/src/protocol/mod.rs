//! The wire between the host and the engine, and between clients and the server: RESP
//! requests (`resp`), replies in RESP2/RESP3 (`reply`), and the records of one engine call
//! with the effects they carry (`batch`). The host imports this layer and nothing above it.

pub mod batch;
pub mod reply;
pub mod resp;
