//! End-to-end tooling for Memoria: record what concurrent clients saw across failures
//! ([`history`]), decide whether it was linearizable ([`linearizability`]), and drive the
//! load that produces it, riding through failovers ([`workload`]). See e2e/README.md.
#![forbid(unsafe_code)]

pub mod history;
pub mod linearizability;
pub mod workload;
