//! The one SQLite connection setting sqlx has no option for, set through the bundled
//! SQLite's C API: the query planner stability guarantee (QPSG).
//!
//! Why: the SQLite sqlx bundles is built with STAT4, so the planner folds some bound
//! values into a statement's plan (`LIMIT ?` among them) and marks the statement to be
//! parsed and planned again every time a new value is bound. The replicas' tail read was
//! re-prepared on every call: a tenth of the log service's CPU under write load. Each of
//! our statements has one good plan, whatever its values.
#![allow(unsafe_code)]

use std::ffi::c_int;

use sqlx::SqliteConnection;

/// Turns QPSG on for `conn` (an `after_connect` hook of every pool).
pub(crate) async fn stable_plans(conn: &mut SqliteConnection) -> Result<(), sqlx::Error> {
    match qpsg(conn, 1).await? {
        1 => Ok(()),
        _ => Err(sqlx::Error::Configuration("sqlite: the query planner stability guarantee did not turn on".into())),
    }
}

/// Whether QPSG is on for `conn`.
#[cfg(test)]
pub(crate) async fn has_stable_plans(conn: &mut SqliteConnection) -> Result<bool, sqlx::Error> {
    Ok(qpsg(conn, -1).await? == 1)
}

/// `sqlite3_db_config(SQLITE_DBCONFIG_ENABLE_QPSG)`: `set` 1 turns it on, 0 off, -1 only
/// asks; returns the setting after the call.
async fn qpsg(conn: &mut SqliteConnection, set: c_int) -> Result<c_int, sqlx::Error> {
    let mut handle = conn.lock_handle().await?;
    let db = handle.as_raw_handle().as_ptr();
    let mut now: c_int = -1;
    // SAFETY: `lock_handle` keeps sqlx's worker thread off this connection for the call;
    // the option's arguments are an int and an int* that receives the resulting setting.
    let rc = unsafe { libsqlite3_sys::sqlite3_db_config(db, libsqlite3_sys::SQLITE_DBCONFIG_ENABLE_QPSG, set, &mut now as *mut c_int) };
    if rc != libsqlite3_sys::SQLITE_OK {
        return Err(sqlx::Error::Configuration(format!("sqlite3_db_config(ENABLE_QPSG) failed with code {rc}").into()));
    }
    Ok(now)
}
