//! `sqlx::migrate!` embeds the migrations at compile time but does not watch their
//! directory: without this, a new migration file is missed by an incremental build.
fn main() {
    println!("cargo:rerun-if-changed=../migrations");
}
