//! SLOWLOG, LATENCY, INFO commandstats, errorstats and latencystats against redis-server
//! 7.0.15: the same conversation on both servers. What only a clock decides is masked: an
//! entry's timestamp and duration, a command's `usec` and `usec_per_call`, percentiles and
//! histogram buckets (their counts must still add up to the calls), the client's port.
//! Everything else must be identical: which commands are logged and in which order,
//! their ids, arguments (trimmed and redacted as Redis does), client address and name;
//! every command's calls, rejected_calls and failed_calls; every error code's count.

mod common;

use common::Raw;

/// A parsed reply, enough for SLOWLOG GET.
#[derive(Debug)]
enum V {
    Int(i64),
    Bulk(Vec<u8>),
    Array(Vec<V>),
    Other(String),
}

fn parse(b: &[u8], pos: &mut usize) -> V {
    let end = *pos + b[*pos..].windows(2).position(|w| w == b"\r\n").unwrap();
    let line = std::str::from_utf8(&b[*pos + 1..end]).unwrap().to_string();
    let kind = b[*pos];
    *pos = end + 2;
    match kind {
        b':' => V::Int(line.parse().unwrap()),
        b'$' => {
            let n: usize = line.parse().unwrap();
            let v = b[*pos..*pos + n].to_vec();
            *pos += n + 2;
            V::Bulk(v)
        }
        b'*' => {
            let n: usize = line.parse().unwrap();
            V::Array((0..n).map(|_| parse(b, pos)).collect())
        }
        _ => V::Other(format!("{}{line}", kind as char)),
    }
}

/// SLOWLOG GET's entries with the clock's parts masked: `id [args] peer name`.
fn entries(reply: &[u8]) -> String {
    let list = match parse(reply, &mut 0) {
        V::Array(list) => list,
        V::Other(line) => return line,
        other => panic!("SLOWLOG GET replied {other:?}"),
    };
    let mut out = Vec::new();
    for e in list {
        let V::Array(f) = e else { panic!("an entry is an array: {e:?}") };
        let [V::Int(id), V::Int(time), V::Int(usec), V::Array(args), V::Bulk(peer), V::Bulk(name)] = &f[..] else { panic!("entry {f:?}") };
        assert!(*time > 1_600_000_000 && *usec >= 0, "timestamp {time}, duration {usec}");
        let args: Vec<String> = args
            .iter()
            .map(|a| match a {
                V::Bulk(a) => String::from_utf8_lossy(a).into_owned(),
                other => panic!("argument {other:?}"),
            })
            .collect();
        let peer = String::from_utf8_lossy(peer);
        let peer = match peer.rsplit_once(':') {
            Some((ip, port)) if port != "0" => format!("{ip}:*"),
            _ => peer.into_owned(),
        };
        out.push(format!("{id} {args:?} {peer} {:?}", String::from_utf8_lossy(name)));
    }
    out.join("\n")
}

/// LATENCY HISTOGRAM's reply with the buckets masked: per command its calls, and whether
/// the buckets rise and end at the calls.
fn histograms(reply: &[u8]) -> String {
    let V::Array(items) = parse(reply, &mut 0) else { return String::from_utf8_lossy(reply).into_owned() };
    let mut out = Vec::new();
    for pair in items.chunks(2) {
        let [V::Bulk(name), V::Array(body)] = pair else { panic!("{pair:?}") };
        let [V::Bulk(calls_key), V::Int(calls), V::Bulk(hist_key), V::Array(buckets)] = &body[..] else { panic!("{body:?}") };
        let counts: Vec<i64> = buckets.iter().skip(1).step_by(2).map(|v| if let V::Int(n) = v { *n } else { panic!("{v:?}") }).collect();
        let rising = counts.windows(2).all(|w| w[0] < w[1]) && counts.last() == Some(calls);
        out.push(format!(
            "{} {}={calls} {} ends at the calls: {rising}",
            String::from_utf8_lossy(name),
            String::from_utf8_lossy(calls_key),
            String::from_utf8_lossy(hist_key)
        ));
    }
    out.join("\n")
}

/// An INFO section's lines, `usec`, `usec_per_call` and percentiles masked, sorted (Redis
/// lists commands in its hash table's order).
fn section(c: &mut Raw, name: &str) -> String {
    let r = c.cmd(&["INFO", name]);
    let V::Bulk(text) = parse(&r, &mut 0) else { panic!("INFO {name}: {r:?}") };
    let mut lines: Vec<String> = String::from_utf8(text)
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            l.split(',')
                .map(|f| {
                    let masked = f.starts_with("usec=") || f.starts_with("usec_per_call=") || f.contains(":p") || f.starts_with('p');
                    if masked { f.rsplit_once('=').map_or(f.to_string(), |(k, _)| format!("{k}=*")) } else { f.to_string() }
                })
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect();
    lines.sort();
    lines.join("\n")
}

fn total_errors(c: &mut Raw) -> String {
    let r = String::from_utf8(c.cmd(&["INFO", "stats"])).unwrap();
    r.lines().find(|l| l.starts_with("total_error_replies:")).unwrap_or("total_error_replies: missing").to_string()
}

/// Sends `args` on `c` and notes the exchange.
fn say(seen: &mut Vec<String>, c: &mut Raw, args: &[&str]) {
    let r = String::from_utf8_lossy(&c.cmd(args)).into_owned();
    seen.push(format!("{args:?} -> {r:?}"));
}

fn conversation(port: u16) -> Vec<String> {
    let mut a = Raw::connect(port);
    let mut b = Raw::connect(port);
    let mut seen = Vec::new();
    say(&mut seen, &mut a, &["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
    say(&mut seen, &mut a, &["SLOWLOG", "RESET"]);
    say(&mut seen, &mut a, &["CONFIG", "RESETSTAT"]);
    say(&mut seen, &mut a, &["CLIENT", "SETNAME", "alice"]);
    let long = "x".repeat(200);
    say(&mut seen, &mut a, &["SET", "k", &long]);
    let many: Vec<String> = (0..40).map(|i| i.to_string()).collect();
    let mut rpush = vec!["RPUSH", "l"];
    rpush.extend(many.iter().map(String::as_str));
    say(&mut seen, &mut a, &rpush);
    say(&mut seen, &mut a, &["AUTH", "secret"]);
    say(&mut seen, &mut a, &["AUTH", "someone", "secret"]);
    // (HELLO's replies hold the client id, which differs between the servers.)
    assert!(a.cmd(&["HELLO", "3", "AUTH", "default", "pw"]).starts_with(b"%7"));
    assert!(a.cmd(&["HELLO", "2"]).starts_with(b"*14"));
    say(&mut seen, &mut a, &["MULTI"]);
    say(&mut seen, &mut a, &["SET", "m", "1"]);
    say(&mut seen, &mut a, &["INCR", "k"]);
    say(&mut seen, &mut a, &["EXEC"]);
    say(&mut seen, &mut a, &["MULTI"]);
    say(&mut seen, &mut a, &["GET"]);
    say(&mut seen, &mut a, &["EXEC"]);
    // Scripts: their calls are logged as `?:0`; an error of a command a script called
    // counts once, whether the script returns it or raises it.
    say(&mut seen, &mut a, &["EVAL", "redis.call('set','e','1'); return redis.pcall('incr','k')", "0"]);
    say(&mut seen, &mut a, &["EVAL", "return redis.call('incr','k')", "0"]);
    say(&mut seen, &mut a, &["EVAL", "return redis.error_reply('MYCODE custom')", "0"]);
    say(&mut seen, &mut a, &["EVAL", "return {1, redis.pcall('incr','k'), redis.error_reply('OTHER x')}", "0"]);
    say(&mut seen, &mut a, &["EVAL", "return redis.call('nosuch')", "0"]);
    say(&mut seen, &mut a, &["NOPE", "x"]);
    say(&mut seen, &mut a, &["GET"]);
    say(&mut seen, &mut a, &["SLOWLOG", "LEN", "x"]);
    say(&mut seen, &mut a, &["SLOWLOG", "GET", "1", "2"]);
    say(&mut seen, &mut a, &["SLOWLOG", "GET", "-2"]);
    say(&mut seen, &mut a, &["SLOWLOG", "GET", "abc"]);
    say(&mut seen, &mut a, &["SLOWLOG", "FOO"]);
    say(&mut seen, &mut a, &["SLOWLOG"]);
    say(&mut seen, &mut a, &["SLOWLOG", "HELP"]);
    say(&mut seen, &mut a, &["LPUSH", "k", "v"]);
    say(&mut seen, &mut a, &["BLPOP", "nokey", "0.01"]);
    say(&mut seen, &mut b, &["GET", "k"]);
    say(&mut seen, &mut b, &["CLIENT", "SETNAME", "bob"]);
    // Secrets are logged as `(redacted)`: every rule of ACL SETUSER, sensitive CONFIG SET
    // values.
    say(&mut seen, &mut a, &["ACL", "SETUSER", "carol", "on", ">carol-pw", "~*", "+@all"]);
    say(&mut seen, &mut a, &["CONFIG", "SET", "requirepass", "sekrit", "maxmemory-policy", "noeviction"]);
    say(&mut seen, &mut a, &["CONFIG", "SET", "maxmemory-policy", "noeviction", "requirepass", "x"]);
    say(&mut seen, &mut a, &["CONFIG", "SET", "requirepass", ""]);

    let all = a.cmd(&["SLOWLOG", "GET", "-1"]);
    seen.push(format!("SLOWLOG GET -1:\n{}", entries(&all)));
    seen.push(format!("SLOWLOG GET 3:\n{}", entries(&a.cmd(&["SLOWLOG", "GET", "3"]))));
    seen.push(format!("SLOWLOG GET:\n{}", entries(&a.cmd(&["SLOWLOG", "GET"]))));
    seen.push(format!("LEN {:?}", String::from_utf8_lossy(&a.cmd(&["SLOWLOG", "LEN"]))));
    seen.push(section(&mut a, "commandstats"));
    seen.push(section(&mut a, "errorstats"));
    seen.push(section(&mut a, "latencystats"));
    seen.push(total_errors(&mut a));
    seen.push(format!("LATENCY HISTOGRAM set client get:\n{}", histograms(&a.cmd(&["LATENCY", "HISTOGRAM", "set", "client", "GET", "nosuch"]))));
    seen.push(format!("LATENCY HISTOGRAM set set:\n{}", histograms(&a.cmd(&["LATENCY", "HISTOGRAM", "set", "SET"]))));

    // The log keeps slowlog-max-len entries; a negative threshold logs nothing.
    say(&mut seen, &mut a, &["CONFIG", "SET", "slowlog-max-len", "3"]);
    say(&mut seen, &mut a, &["PING"]);
    say(&mut seen, &mut a, &["SLOWLOG", "LEN"]);
    say(&mut seen, &mut a, &["CONFIG", "SET", "slowlog-log-slower-than", "-1"]);
    say(&mut seen, &mut a, &["SLOWLOG", "RESET"]);
    say(&mut seen, &mut a, &["PING"]);
    say(&mut seen, &mut a, &["SLOWLOG", "LEN"]);
    // (A command faster than the threshold is counted and not logged: that needs a clock
    // the test controls, core/tests/cmd_slowlog.rs.)
    // LATENCY: the monitor is off by default (no events); its errors and help.
    for args in [
        &["LATENCY", "LATEST"][..],
        &["LATENCY", "HISTORY", "command"],
        &["LATENCY", "RESET"],
        &["LATENCY", "RESET", "command", "fast-command"],
        &["LATENCY", "HISTORY"],
        &["LATENCY", "NOSUCH"],
        &["LATENCY"],
        &["LATENCY", "HELP"],
        &["LATENCY", "DOCTOR"],
        &["LATENCY", "GRAPH", "command"],
        &["LATENCY", "GRAPH"],
        &["CONFIG", "SET", "latency-tracking-info-percentiles", "50 101"],
        &["CONFIG", "SET", "latency-tracking-info-percentiles", "abc"],
        &["CONFIG", "SET", "latency-tracking-info-percentiles", "50.0 99 99.90 0"],
        &["CONFIG", "GET", "latency-tracking-info-percentiles"],
    ] {
        say(&mut seen, &mut a, args);
    }
    seen.push(section(&mut a, "latencystats"));
    say(&mut seen, &mut a, &["CONFIG", "SET", "latency-tracking", "no"]);
    say(&mut seen, &mut a, &["INCR", "counter"]);
    seen.push(format!("LATENCY HISTOGRAM incr, untracked:\n{}", histograms(&a.cmd(&["LATENCY", "HISTOGRAM", "incr"]))));
    say(&mut seen, &mut a, &["CONFIG", "RESETSTAT"]);
    seen.push(section(&mut a, "commandstats"));
    seen.push(section(&mut a, "errorstats"));
    seen.push(section(&mut a, "latencystats"));
    seen
}

#[test]
fn slowlog_and_command_stats_as_redis_keeps_them() {
    common::same_as_redis("SLOWLOG and INFO commandstats/errorstats", conversation);
}
