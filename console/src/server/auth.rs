//! Login with a token, when the deployment configures one (`--token`,
//! MEMORIA_CONSOLE_TOKEN). Everything but the login page and the static bundle then
//! needs either the session cookie (set by logging in: HttpOnly, SameSite=Strict, so
//! another site cannot make the browser act) or `Authorization: Bearer <token>`.
//! Pages redirect to the login; data and actions (server functions) answer 401.

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Redirect, Response};
use sha2::{Digest, Sha256};

use super::Shared;

pub const COOKIE: &str = "memoria_console";

/// The cookie holds a hash of the token (not the token itself).
pub fn session_value(token: &str) -> String {
    let d = Sha256::digest(format!("memoria-console-session\0{token}").as_bytes());
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// Compares without an early exit, so timing does not tell how much matched.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

pub fn authorized(token: &str, headers: &HeaderMap) -> bool {
    if let Some(v) = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok())
        && let Some(t) = v.strip_prefix("Bearer ")
        && same(t.trim().as_bytes(), token.as_bytes())
    {
        return true;
    }
    let want = session_value(token);
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .any(|(k, v)| k == COOKIE && same(v.as_bytes(), want.as_bytes()))
}

fn is_public(path: &str) -> bool {
    path == "/login" || path == "/logout" || path.starts_with("/pkg/") || path == "/favicon.ico" || path == "/healthz"
}

pub async fn require(State(c): State<Shared>, req: Request, next: Next) -> Response {
    let Some(token) = c.args.token.clone() else { return next.run(req).await };
    if is_public(req.uri().path()) || authorized(&token, req.headers()) {
        return next.run(req).await;
    }
    let page = req.method() == Method::GET && !req.uri().path().starts_with("/api/");
    if page {
        Redirect::to("/login").into_response()
    } else {
        (StatusCode::UNAUTHORIZED, [(header::WWW_AUTHENTICATE, "Bearer")], "unauthenticated: log in to the console first\n").into_response()
    }
}

pub async fn login_page(State(c): State<Shared>) -> Response {
    if c.args.token.is_none() {
        return Redirect::to("/").into_response();
    }
    Html(login_html("")).into_response()
}

#[derive(serde::Deserialize)]
pub struct LoginForm {
    token: String,
}

pub async fn login(State(c): State<Shared>, axum::Form(f): axum::Form<LoginForm>) -> Response {
    let Some(token) = c.args.token.clone() else { return Redirect::to("/").into_response() };
    if !same(f.token.trim().as_bytes(), token.as_bytes()) {
        return (StatusCode::UNAUTHORIZED, Html(login_html("That token is not the one this console was started with."))).into_response();
    }
    let cookie = format!("{COOKIE}={}; HttpOnly; SameSite=Strict; Path=/", session_value(&token));
    ([(header::SET_COOKIE, cookie)], Redirect::to("/")).into_response()
}

pub async fn logout() -> Response {
    ([(header::SET_COOKIE, format!("{COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0"))], Redirect::to("/login")).into_response()
}

fn login_html(error: &str) -> String {
    let err = if error.is_empty() { String::new() } else { format!("<p class=\"error\" role=\"alert\">{error}</p>") };
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>Memoria console: log in</title><style>{}</style></head><body><main class=\"login\"><h1>Memoria console</h1>\
         <form method=\"post\" action=\"/login\"><label for=\"token\">Console token</label>\
         <input id=\"token\" name=\"token\" type=\"password\" autocomplete=\"current-password\" autofocus required>\
         <button type=\"submit\">Log in</button></form>{err}</main></body></html>",
        crate::app::STYLE
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_or_cookie() {
        let mut h = HeaderMap::new();
        assert!(!authorized("s3cret", &h));
        h.insert(header::AUTHORIZATION, "Bearer s3cret".parse().unwrap());
        assert!(authorized("s3cret", &h));
        assert!(!authorized("other", &h));
        let mut h = HeaderMap::new();
        h.insert(header::COOKIE, format!("a=b; {COOKIE}={}", session_value("s3cret")).parse().unwrap());
        assert!(authorized("s3cret", &h));
        let mut h = HeaderMap::new();
        h.insert(header::COOKIE, format!("{COOKIE}=s3cret").parse().unwrap());
        assert!(!authorized("s3cret", &h), "the cookie holds the session hash, not the token");
    }
}
