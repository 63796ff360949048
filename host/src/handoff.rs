//! The stable endpoint without a proxy: `memoria up` accepts each client connection on the
//! documented port and hands the socket itself to the current primary's process over a
//! Unix socket (SCM_RIGHTS). From then on the client and the primary talk directly; the
//! supervisor is in the accept path only, never in the data path.
//!
//! A node takes a handed-off connection only while it is the primary (checked by the
//! shard when the connection registers, `ShardMsg::Connect::primary_only`), and drops
//! those connections when it steps down, as it drops all its clients.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

use sendfd::{RecvWithFd, SendWithFd};

/// What the connection carries, so the node speaks the right protocol on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// RESP in the clear (the stable port).
    Plain,
    /// TLS from the first byte (the stable TLS port).
    Tls,
}

impl Kind {
    fn tag(self) -> u8 {
        match self {
            Kind::Plain => b'P',
            Kind::Tls => b'T',
        }
    }

    fn of(tag: u8) -> Option<Kind> {
        match tag {
            b'P' => Some(Kind::Plain),
            b'T' => Some(Kind::Tls),
            _ => None,
        }
    }
}

/// Where the node whose RESP port is `node_port` takes hand-offs: in the data dir, so only
/// the user running Memoria reaches it.
pub fn socket_path(data_dir: &Path, node_port: u16) -> PathBuf {
    data_dir.join(format!("handoff-{node_port}.sock"))
}

/// How long a hand-off may wait for the node to take the connection (a frozen node's
/// backlog fills up; the client is closed rather than queued behind it).
const SEND_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(1);

/// The longest path a Unix socket can be bound at (`sun_path` is 108 bytes with its NUL).
pub const MAX_SOCKET_PATH: usize = 107;

/// Refuses a socket path the kernel could not bind, with the reason a user can act on.
pub fn check_path(path: &Path) -> Result<(), String> {
    let len = path.as_os_str().len();
    if len > MAX_SOCKET_PATH {
        return Err(format!(
            "the hand-off socket {} is {len} bytes long, past the {MAX_SOCKET_PATH} a Unix socket path may have: use a shorter --data-dir",
            path.display()
        ));
    }
    Ok(())
}

/// Hands `stream` to the node listening at `path`: a Unix connect and one sendmsg. The
/// caller drops its copy afterwards; the node's copy keeps the client.
pub async fn send(path: &Path, stream: &std::net::TcpStream, kind: Kind) -> io::Result<()> {
    let s = tokio::time::timeout(SEND_TIMEOUT, tokio::net::UnixStream::connect(path))
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "the node does not take hand-offs"))??;
    // A fresh socket's buffer takes one byte and a descriptor without blocking.
    let s = s.into_std()?;
    let n = s.send_with_fd(&[kind.tag()], &[stream.as_raw_fd()])?;
    if n != 1 {
        return Err(io::Error::new(io::ErrorKind::WriteZero, "hand-off message not sent"));
    }
    Ok(())
}

/// Binds the node's hand-off socket (replacing a stale one) with owner-only permissions.
pub fn bind(path: &Path) -> io::Result<UnixListener> {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::remove_file(path);
    let l = UnixListener::bind(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    Ok(l)
}

/// Node side: a thread that takes hand-offs one by one and gives each socket (made
/// non-blocking) to `deliver`. Malformed messages are dropped with whatever they carried.
pub fn serve(listener: UnixListener, deliver: impl Fn(Kind, std::net::TcpStream) + Send + 'static) -> std::thread::JoinHandle<()> {
    std::thread::Builder::new()
        .name("handoff".into())
        .spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                match receive(&conn) {
                    Ok(Some((kind, stream))) => deliver(kind, stream),
                    Ok(None) => {}
                    Err(e) => tracing::warn!(error = %e, "hand-off failed"),
                }
            }
        })
        .expect("spawning the hand-off thread")
}

fn receive(conn: &UnixStream) -> io::Result<Option<(Kind, std::net::TcpStream)>> {
    let mut tag = [0u8; 1];
    let mut fds: [RawFd; 2] = [-1; 2];
    let (n, nfds) = conn.recv_with_fd(&mut tag, &mut fds)?;
    // Own every descriptor that arrived, so none leaks whatever the message was.
    // SAFETY: recvmsg just created these descriptors in this process; nothing else owns them.
    let mut owned = fds[..nfds].iter().map(|&fd| unsafe { OwnedFd::from_raw_fd(fd) });
    let first = owned.next();
    let extra = owned.count();
    let (1, Some(kind), Some(fd), 0) = (n, Kind::of(tag[0]), first, extra) else {
        return Ok(None);
    };
    let stream = std::net::TcpStream::from(fd);
    stream.set_nonblocking(true)?;
    Ok(Some((kind, stream)))
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};

    use super::*;

    /// Hands a fresh client connection over as `kind`, takes the next delivery, and checks
    /// that it is that connection, of that kind, talking to the client.
    async fn hand_off_and_talk(path: &Path, listener: &std::net::TcpListener, rx: &std::sync::mpsc::Receiver<(Kind, std::net::TcpStream)>, kind: Kind) {
        let mut client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (accepted, _) = listener.accept().unwrap();
        send(path, &accepted, kind).await.unwrap();
        drop(accepted); // the node's copy keeps the connection open
        let (got_kind, mut node_side) = rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap();
        assert_eq!(got_kind, kind);
        node_side.set_nonblocking(false).unwrap();
        node_side.write_all(b"+PONG\r\n").unwrap();
        let mut got = [0u8; 7];
        client.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"+PONG\r\n");
    }

    #[tokio::test]
    async fn a_handed_socket_reaches_the_node_and_talks_to_the_client() {
        let dir = std::env::temp_dir().join(format!("memoria-handoff-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = socket_path(&dir, 1);
        let (tx, rx) = std::sync::mpsc::channel();
        serve(bind(&path).unwrap(), move |kind, stream| tx.send((kind, stream)).unwrap());
        let mode = std::fs::metadata(&path).unwrap();
        assert_eq!(std::os::unix::fs::PermissionsExt::mode(&mode.permissions()) & 0o777, 0o600);

        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        hand_off_and_talk(&path, &listener, &rx, Kind::Tls).await;

        // A message without a descriptor, or with a tag nobody knows, delivers nothing.
        let s = UnixStream::connect(&path).unwrap();
        s.send_with_fd(b"P", &[]).unwrap();
        drop(s);
        let s = UnixStream::connect(&path).unwrap();
        let (a, _b) = UnixStream::pair().unwrap();
        s.send_with_fd(b"X", &[a.as_raw_fd()]).unwrap();
        drop(s);
        // Hand-offs are taken one by one in the order they connect: if either bad message
        // had delivered something, it would come before this good one (no timing involved).
        hand_off_and_talk(&path, &listener, &rx, Kind::Plain).await;
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn socket_paths_past_the_kernel_limit_are_refused_with_a_reason() {
        assert!(check_path(&socket_path(Path::new("/tmp/memoria-data"), 6380)).is_ok());
        let long = Path::new("/").join("d".repeat(100));
        let e = check_path(&socket_path(&long, 6380)).unwrap_err();
        assert!(e.contains("use a shorter --data-dir"), "{e}");
        // The limit is the kernel's: a path of exactly MAX_SOCKET_PATH bytes binds.
        let dir = std::env::temp_dir().join(format!("memoria-handoff-len-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let name_len = MAX_SOCKET_PATH - dir.as_os_str().len() - 1;
        let exact = dir.join("s".repeat(name_len));
        assert_eq!(exact.as_os_str().len(), MAX_SOCKET_PATH);
        assert!(check_path(&exact).is_ok());
        bind(&exact).expect("a path of the maximum length binds");
        assert!(bind(&dir.join("s".repeat(name_len + 1))).is_err(), "one byte more does not");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
