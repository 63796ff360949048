//! The hydration bundle: with the `ssr` feature (the server), builds this crate's library
//! for wasm32-unknown-unknown with `hydrate`, runs wasm-bindgen (the cli-support crate, at
//! the exact version of the `wasm-bindgen` dependency) and leaves `console.js` and
//! `console_bg.wasm` in OUT_DIR, which the server embeds. Nothing is fetched: the inner
//! cargo uses the workspace's lockfile and registry like the outer one.
//!
//! The inner cargo uses its own target dir: the outer build holds the lock on ours (it
//! would deadlock), as host/build.rs does for the engine.

use std::path::Path;
#[cfg(feature = "ssr")]
use std::{path::PathBuf, process::Command};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=Cargo.toml");
    println!("cargo:rerun-if-env-changed=MEMORIA_CONSOLE_SKIP_WASM");
    // Only the server embeds the bundle; the wasm build itself (hydrate) must not recurse.
    let ssr = std::env::var_os("CARGO_FEATURE_SSR").is_some();
    let target = std::env::var("TARGET").unwrap_or_default();
    if !ssr || target.starts_with("wasm32") {
        return;
    }
    #[cfg(feature = "ssr")]
    build_bundle();
}

#[cfg(feature = "ssr")]
fn build_bundle() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let root = manifest.parent().unwrap().to_path_buf();
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let pkg = out.join("pkg");
    std::fs::create_dir_all(&pkg).unwrap();
    if std::env::var_os("MEMORIA_CONSOLE_SKIP_WASM").is_some() {
        // Server-only builds (e.g. checking the crate): the page then works without
        // JavaScript only, and says so.
        write_if_changed(&pkg.join("console.js"), b"export default async function() {} export function hydrate() { console.warn('memoria console built without its hydration bundle (MEMORIA_CONSOLE_SKIP_WASM)'); }\n");
        write_if_changed(&pkg.join("console_bg.wasm"), b"");
        return;
    }
    // OUT_DIR = <target>/<profile>/build/<pkg>-<hash>/out: the wasm build lives next to
    // it so it stays warm across builds.
    let target_dir = out.ancestors().nth(4).map(|p| p.join("console-wasm")).unwrap_or_else(|| out.join("console-wasm"));
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(&cargo)
        .current_dir(&root)
        .args([
            "rustc",
            "-p",
            "memoria-console",
            "--lib",
            "--crate-type",
            "cdylib",
            "--release",
            "--target",
            "wasm32-unknown-unknown",
            "--no-default-features",
            "--features",
            "hydrate",
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
        .env_remove("CARGO_FEATURE_SSR")
        .status()
        .expect("failed to run cargo for the console's hydration bundle");
    if !status.success() {
        panic!(
            "building the console for wasm32-unknown-unknown failed.\n\
             If the target is missing, run `rustup toolchain install` in the repository \
             (rust-toolchain.toml pins the toolchain and the wasm32 target)."
        );
    }
    // `cargo rustc --crate-type cdylib`: only the wasm build is a cdylib (a native one
    // would link the whole server into a shared library for nothing).
    let wasm = target_dir.join("wasm32-unknown-unknown/release/memoria_console.wasm");
    let mut b = wasm_bindgen_cli_support::Bindgen::new();
    b.input_path(&wasm).web(true).expect("wasm-bindgen --target web").out_name("console").typescript(false);
    let tmp = out.join("bindgen");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    b.generate(&tmp).unwrap_or_else(|e| panic!("wasm-bindgen on {}: {e}", wasm.display()));
    for f in ["console.js", "console_bg.wasm"] {
        let bytes = std::fs::read(tmp.join(f)).unwrap_or_else(|e| panic!("wasm-bindgen output {f}: {e}"));
        write_if_changed(&pkg.join(f), &bytes);
    }
}

#[allow(dead_code)]
fn write_if_changed(path: &Path, bytes: &[u8]) {
    if std::fs::read(path).ok().as_deref() != Some(bytes) {
        std::fs::write(path, bytes).unwrap();
    }
}
