//! Where snapshots live: an `object_store` (a local directory by default; `s3://`, `gs://`
//! and `az://` URLs with the host's `cloud` feature, configured from the usual
//! environment variables such as AWS_ACCESS_KEY_ID, GOOGLE_SERVICE_ACCOUNT, AZURE_STORAGE_…).
//!
//! Layout under the store's prefix, per log:
//! ```text
//! <log>/data/<name>/<index:06>.chunk   chunk objects (format.rs)
//! <log>/manifests/<name>.json          written last: the snapshot's publication
//! ```
//! A snapshot without a manifest is unpublished (being written, or failed) and never read.

use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use futures::TryStreamExt;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{ObjectStore, PutPayload};

use super::SnapshotError;
use super::format::MAX_CHUNK_BYTES;
use super::manifest::{Manifest, ManifestError};
use super::paced::{self, Pacing};

#[derive(Clone)]
pub struct SnapshotStore {
    store: Arc<dyn ObjectStore>,
    prefix: Path,
    /// The directory of a local store, to fsync what was written (object_store does not).
    local_root: Option<PathBuf>,
    url: String,
    /// How this process paces its snapshot work (and writes chunks to a local directory).
    pacing: Pacing,
}

/// A manifest found in the store; `manifest` is the reason it cannot be used, if any.
pub struct Listed {
    pub name: String,
    pub manifest: Result<Manifest, ManifestError>,
}

impl std::fmt::Debug for SnapshotStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SnapshotStore({})", self.url)
    }
}

impl SnapshotStore {
    /// `location`: a directory path (created if missing), `file:///abs/dir`, or an
    /// `s3://bucket/prefix`, `gs://bucket/prefix`, `az://container/prefix` URL.
    pub fn open(location: &str) -> Result<SnapshotStore, SnapshotError> {
        let dir = match location.strip_prefix("file://") {
            Some(p) => Some(PathBuf::from(p)),
            None if !location.contains("://") => Some(PathBuf::from(location)),
            None => None,
        };
        if let Some(dir) = dir {
            std::fs::create_dir_all(&dir)?;
            let dir = dir.canonicalize()?;
            let fs = LocalFileSystem::new_with_prefix(&dir)?.with_automatic_cleanup(true);
            return Ok(SnapshotStore {
                store: Arc::new(fs),
                prefix: Path::default(),
                local_root: Some(dir.clone()),
                url: dir.display().to_string(),
                pacing: Pacing::default(),
            });
        }
        Self::open_cloud(location)
    }

    #[cfg(feature = "cloud")]
    fn open_cloud(location: &str) -> Result<SnapshotStore, SnapshotError> {
        let url = url_parse(location)?;
        // Builders read the keys they know (aws_access_key_id, google_service_account, …)
        // and ignore the rest of the environment.
        let env = std::env::vars().map(|(k, v)| (k.to_ascii_lowercase(), v));
        let (store, prefix) = object_store::parse_url_opts(&url, env)?;
        Ok(SnapshotStore { store: Arc::from(store), prefix, local_root: None, url: location.to_string(), pacing: Pacing::default() })
    }

    #[cfg(not(feature = "cloud"))]
    fn open_cloud(location: &str) -> Result<SnapshotStore, SnapshotError> {
        Err(SnapshotError::Invalid(format!(
            "{location}: this build has no cloud object stores; rebuild with `--features memoria-host/cloud` or use a directory"
        )))
    }

    /// An in-memory store (tests).
    pub fn memory() -> SnapshotStore {
        SnapshotStore {
            store: Arc::new(object_store::memory::InMemory::new()),
            prefix: Path::default(),
            local_root: None,
            url: "memory://".into(),
            pacing: Pacing::default(),
        }
    }

    /// Sets how snapshot work through this store is paced (the snapshot process's
    /// `--cpu-share`, `--sync-kib`).
    pub fn with_pacing(mut self, pacing: Pacing) -> SnapshotStore {
        self.pacing = pacing;
        self
    }

    /// A duty cycle for one run of work through this store (restore, dump).
    pub fn duty(&self) -> paced::Duty {
        paced::Duty::new(self.pacing.cpu_share)
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// The local directory behind this store, if it is one.
    pub fn local_dir(&self) -> Option<&std::path::Path> {
        self.local_root.as_deref()
    }

    fn join(&self, parts: &[&str]) -> Path {
        let mut p = self.prefix.clone();
        for part in parts {
            p = p.child(*part);
        }
        p
    }

    pub fn chunk_path(&self, log: &str, name: &str, index: u32) -> Path {
        self.join(&[log, "data", name, &format!("{index:06}.chunk")])
    }

    pub fn manifest_path(&self, log: &str, name: &str) -> Path {
        self.join(&[log, "manifests", &format!("{name}.json")])
    }

    async fn sync_local(&self, paths: &[&Path]) -> Result<(), SnapshotError> {
        let Some(root) = self.local_root.clone() else { return Ok(()) };
        let files: Vec<PathBuf> = paths.iter().map(|p| root.join(p.as_ref())).collect();
        tokio::task::spawn_blocking(move || -> std::io::Result<()> {
            for f in files {
                std::fs::File::open(&f)?.sync_all()?;
                if let Some(dir) = f.parent() {
                    std::fs::File::open(dir)?.sync_all()?;
                }
            }
            Ok(())
        })
        .await
        .map_err(|e| SnapshotError::Invalid(format!("fsync task: {e}")))??;
        Ok(())
    }

    pub async fn put_chunk(&self, log: &str, name: &str, index: u32, bytes: Vec<u8>) -> Result<(), SnapshotError> {
        let path = self.chunk_path(log, name, index);
        if let Some(root) = &self.local_root {
            // Written here rather than by object_store: in paced pieces, see paced.rs.
            let (file, pacing) = (root.join(path.as_ref()), self.pacing);
            return tokio::task::spawn_blocking(move || paced::write_file(&file, &bytes, pacing))
                .await
                .map_err(|e| SnapshotError::Invalid(format!("chunk write task: {e}")))?
                .map_err(SnapshotError::from);
        }
        // Not a local directory (those returned above): nothing to fsync here.
        self.store.put(&path, PutPayload::from(bytes)).await?;
        Ok(())
    }

    /// Reads chunk `index`, refusing one larger than any chunk may be before reading it.
    pub async fn get_chunk(&self, log: &str, name: &str, index: u32) -> Result<Bytes, SnapshotError> {
        let r = self.store.get(&self.chunk_path(log, name, index)).await?;
        if r.meta.size as usize > MAX_CHUNK_BYTES + super::format::HEADER_LEN {
            return Err(super::format::FormatError::TooLarge { index, len: r.meta.size as usize }.into());
        }
        Ok(r.bytes().await?)
    }

    /// Seals and writes the manifest (durably, for a local store): the snapshot is
    /// published from here on.
    pub async fn put_manifest(&self, m: &mut Manifest) -> Result<(), SnapshotError> {
        let bytes = m.seal();
        let path = self.manifest_path(&m.log, &m.name);
        self.store.put(&path, PutPayload::from(bytes)).await?;
        self.sync_local(&[&path]).await
    }

    /// Raw write of a manifest object (tests of damaged manifests).
    #[doc(hidden)]
    pub async fn put_raw(&self, path: &Path, bytes: Vec<u8>) -> Result<(), SnapshotError> {
        self.store.put(path, PutPayload::from(bytes)).await?;
        Ok(())
    }

    /// Every manifest of `log`, newest (highest log id) first, with the reason any of them
    /// cannot be used.
    pub async fn manifests(&self, log: &str) -> Result<Vec<Listed>, SnapshotError> {
        let dir = self.join(&[log, "manifests"]);
        let metas: Vec<_> = self.store.list(Some(&dir)).try_collect().await?;
        let mut out = Vec::new();
        for meta in metas {
            let Some(name) = meta.location.filename().and_then(|f| f.strip_suffix(".json")).map(str::to_string) else { continue };
            let manifest = match self.store.get(&meta.location).await {
                Ok(r) if r.meta.size > 16 << 20 => Err(ManifestError::Inconsistent(format!("{} bytes is too large for a manifest", r.meta.size))),
                Ok(r) => match r.bytes().await {
                    Ok(b) => Manifest::parse(&b).and_then(|m| {
                        if m.name != name || m.log != log {
                            Err(ManifestError::Inconsistent(format!("stored as {log}/{name} but names {}/{}", m.log, m.name)))
                        } else {
                            Ok(m)
                        }
                    }),
                    Err(e) => Err(ManifestError::Json(format!("unreadable: {e}"))),
                },
                // Removed between the listing and the read (a concurrent clean-up).
                Err(object_store::Error::NotFound { .. }) => continue,
                Err(e) => return Err(e.into()),
            };
            out.push(Listed { name, manifest });
        }
        out.sort_by(|a, b| b.name.cmp(&a.name));
        Ok(out)
    }

    /// Names of snapshot data folders of `log` (published or not).
    pub async fn data_names(&self, log: &str) -> Result<Vec<String>, SnapshotError> {
        let dir = self.join(&[log, "data"]);
        let r = self.store.list_with_delimiter(Some(&dir)).await?;
        Ok(r.common_prefixes.iter().filter_map(|p| p.filename().map(str::to_string)).collect())
    }

    /// Deletes a snapshot: the manifest first (unpublish), then its chunks.
    pub async fn remove(&self, log: &str, name: &str) -> Result<(), SnapshotError> {
        match self.store.delete(&self.manifest_path(log, name)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => return Err(e.into()),
        }
        let dir = self.join(&[log, "data", name]);
        let chunks: Vec<_> = self.store.list(Some(&dir)).try_collect().await?;
        for c in chunks {
            match self.store.delete(&c.location).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }
}

#[cfg(feature = "cloud")]
fn url_parse(s: &str) -> Result<url::Url, SnapshotError> {
    url::Url::parse(s).map_err(|e| SnapshotError::Invalid(format!("{s}: {e}")))
}
