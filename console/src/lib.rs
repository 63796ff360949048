//! memoria-console: the web console (issue #8). A Leptos app rendered on the server
//! (`ssr`: the `memoria-console` binary, axum) and hydrated in the browser (`hydrate`:
//! the wasm32 bundle that build.rs produces and the server embeds).

pub mod app;
pub mod model;
#[cfg(feature = "ssr")]
pub mod server;

/// The browser's entry point (called by the bundle's loader in the page).
#[cfg(feature = "hydrate")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    leptos::mount::hydrate_body(app::App);
    // Tests (and curious operators) can tell a live page from a server-rendered one.
    if let Some(b) = web_sys::window().and_then(|w| w.document()).and_then(|d| d.body()) {
        let _ = b.set_attribute("data-hydrated", "1");
    }
}
