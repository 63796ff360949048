//! Builds the engine (memoria-core) for wasm32-unknown-unknown and wraps it into a
//! component whose one import is the command clock; the host embeds the result.
//!
//! The inner cargo uses its own target dir: the outer build holds the lock on ours.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let root = manifest.parent().unwrap().to_path_buf();
    let core = root.join("core");
    // The C of the engine's Lua (core/lua) and the build script that compiles it too.
    for p in ["src", "wit", "lua", "build.rs", "Cargo.toml"] {
        println!("cargo:rerun-if-changed={}", core.join(p).display());
    }
    println!("cargo:rerun-if-changed=build.rs");

    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    // OUT_DIR = <target>/<profile>/build/<pkg>-<hash>/out: keep the guest build next to it
    // so it stays warm across builds.
    let target_dir = out.ancestors().nth(4).map(|p| p.join("wasm-guest")).unwrap_or_else(|| out.join("wasm-guest"));

    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(&cargo)
        .current_dir(&root)
        .args([
            "rustc",
            "-p",
            "memoria-core",
            "--profile",
            "engine",
            "--target",
            "wasm32-unknown-unknown",
            "--features",
            "component",
            "--crate-type",
            "cdylib",
            "--target-dir",
        ])
        .arg(&target_dir)
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_RUSTFLAGS")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET")
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env_remove("CARGO_MAKEFLAGS")
        .status()
        .expect("failed to run cargo for the engine component");
    if !status.success() {
        panic!(
            "building the engine for wasm32-unknown-unknown failed.\n\
             If the target is missing, run `rustup toolchain install` in the repository \
             (rust-toolchain.toml pins the toolchain and the wasm32 target)."
        );
    }
    let module_path = target_dir.join("wasm32-unknown-unknown/engine/memoria_core.wasm");
    let module = std::fs::read(&module_path).unwrap_or_else(|e| panic!("reading {}: {e}", module_path.display()));
    let component = wit_component::ComponentEncoder::default()
        .module(&module)
        .expect("the engine module carries its component type")
        .validate(true)
        .encode()
        .expect("componentizing the engine");
    write_if_changed(&out.join("engine.component.wasm"), &component);
}

fn write_if_changed(path: &Path, bytes: &[u8]) {
    if std::fs::read(path).ok().as_deref() != Some(bytes) {
        std::fs::write(path, bytes).unwrap();
    }
}
