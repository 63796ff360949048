//! Redis's ACL rule syntax: applying one rule to a user (ACLSetUser/ACLSetSelector) and
//! describing a user back as rules (ACLDescribeUser, with its best-fit categories), plus
//! the exact, category-free description that effects and snapshots carry.

use alloc::vec::Vec;

use super::{
    Acl, FLAG_NAMES, FLAG_NOPASS, FLAG_OFF, FLAG_ON, FLAG_SANITIZE, FLAG_SKIP_SANITIZE, FUTURE_BIT, KEY_ALL, KEY_READ, KEY_WRITE, KeyPattern, Selector, User,
    WORDS, acl_cat_bit,
};

pub const ERR_SYNTAX: &str = "Syntax error";
pub const ERR_UNKNOWN: &str = "Unknown command or category name in ACL";
pub const ERR_KEYS_AFTER_ALL: &str = "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns";
pub const ERR_CHANNELS_AFTER_ALL: &str = "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels";
pub const ERR_NO_SUCH_PASS: &str = "The password you are trying to remove from the user does not exist";
pub const ERR_BAD_HASH: &str = "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters";
pub const ERR_FIRSTARG_SUB: &str = "Allowing first-arg of a subcommand is not supported";

fn has_spaces(s: &[u8]) -> bool {
    s.iter().any(|&c| c == 0 || c.is_ascii_whitespace() || c == 0x0b)
}

fn valid_hash(h: &[u8]) -> bool {
    h.len() == 64 && h.iter().all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
}

/// Sets or clears a command (and, for a container, all its subcommands).
pub fn change_perm(acl: &Acl, s: &mut Selector, id: usize, allow: bool) {
    s.set_bit(id, allow);
    s.firstargs.remove(&id);
    let (a, b) = acl.subs[id];
    for sub in a..b {
        s.set_bit(sub, allow);
    }
}

fn set_all(s: &mut Selector, allow: bool) {
    s.allowed = if allow { [u64::MAX; WORDS] } else { [0; WORDS] };
    s.allcommands = allow;
    s.firstargs.clear();
}

/// Applies a category to every command in it, containers (with their subcommands) first
/// as Redis walks its command table.
pub fn set_category(acl: &Acl, s: &mut Selector, cat: u32, allow: bool) {
    for id in 0..acl.specs.len() {
        if acl.cats[id] & cat != 0 {
            change_perm(acl, s, id, allow);
        }
    }
}

/// Looks a command up by its ACL name (`get`, `config|get`).
fn lookup(acl: &Acl, name: &[u8]) -> Option<usize> {
    acl.specs.iter().position(|s| s.name.as_bytes().eq_ignore_ascii_case(name))
}

/// One selector rule (Redis's ACLSetSelector).
pub fn set_selector(acl: &Acl, s: &mut Selector, op: &[u8]) -> Result<(), &'static str> {
    let is = |w: &[u8]| op.eq_ignore_ascii_case(w);
    if is(b"allkeys") || is(b"~*") {
        s.allkeys = true;
        s.patterns.clear();
    } else if is(b"resetkeys") {
        s.allkeys = false;
        s.patterns.clear();
    } else if is(b"allchannels") || is(b"&*") {
        s.allchannels = true;
        s.channels.clear();
    } else if is(b"resetchannels") {
        s.allchannels = false;
        s.channels.clear();
    } else if is(b"allcommands") || is(b"+@all") {
        set_all(s, true);
    } else if is(b"nocommands") || is(b"-@all") {
        set_all(s, false);
    } else if op[0] == b'~' || op[0] == b'%' {
        if s.allkeys {
            return Err(ERR_KEYS_AFTER_ALL);
        }
        let mut fl = 0;
        let mut off = 1;
        if op[0] == b'%' {
            let mut closed = false;
            while off < op.len() {
                let c = op[off];
                if c.eq_ignore_ascii_case(&b'R') && fl & KEY_READ == 0 {
                    fl |= KEY_READ;
                } else if c.eq_ignore_ascii_case(&b'W') && fl & KEY_WRITE == 0 {
                    fl |= KEY_WRITE;
                } else if c == b'~' {
                    off += 1;
                    closed = true;
                    break;
                } else {
                    return Err(ERR_SYNTAX);
                }
                off += 1;
            }
            // Redis takes `%R` with no `~` as an empty pattern with those flags.
            let _ = closed;
            // ... and refuses a rule with neither R nor W (`%`, `%~a`: CVE-2024-51741).
            if fl == 0 {
                return Err(ERR_SYNTAX);
            }
        } else {
            fl = KEY_ALL;
        }
        let pat = &op[off..];
        if has_spaces(pat) {
            return Err(ERR_SYNTAX);
        }
        match s.patterns.iter_mut().find(|p| p.pattern == pat) {
            Some(p) => p.flags |= fl,
            None => s.patterns.push(KeyPattern { flags: fl, pattern: pat.to_vec() }),
        }
        s.allkeys = false;
    } else if op[0] == b'&' {
        if s.allchannels {
            return Err(ERR_CHANNELS_AFTER_ALL);
        }
        let pat = &op[1..];
        if has_spaces(pat) {
            return Err(ERR_SYNTAX);
        }
        if !s.channels.iter().any(|c| c == pat) {
            s.channels.push(pat.to_vec());
        }
        s.allchannels = false;
    } else if op[0] == b'+' && op.get(1) != Some(&b'@') {
        let name = &op[1..];
        match name.iter().rposition(|&c| c == b'|') {
            None => {
                let id = lookup(acl, name).ok_or(ERR_UNKNOWN)?;
                change_perm(acl, s, id, true);
            }
            Some(bar) => {
                let (base, sub) = (&name[..bar], &name[bar + 1..]);
                let id = lookup(acl, base).ok_or(ERR_UNKNOWN)?;
                if acl.specs[id].name.contains('|') {
                    return Err(ERR_FIRSTARG_SUB);
                }
                if sub.is_empty() {
                    return Err(ERR_SYNTAX);
                }
                if !acl.specs[id].subcommands.is_empty() {
                    let full = lookup(acl, name).ok_or(ERR_UNKNOWN)?;
                    change_perm(acl, s, full, true);
                } else {
                    let list = s.firstargs.entry(id).or_default();
                    if !list.iter().any(|x| x.eq_ignore_ascii_case(sub)) {
                        list.push(sub.to_vec());
                    }
                }
            }
        }
    } else if op[0] == b'-' && op.get(1) != Some(&b'@') {
        let id = lookup(acl, &op[1..]).ok_or(ERR_UNKNOWN)?;
        change_perm(acl, s, id, false);
    } else if (op[0] == b'+' || op[0] == b'-') && op.get(1) == Some(&b'@') {
        let cat = acl_cat_bit(&op[2..]).ok_or(ERR_UNKNOWN)?;
        set_category(acl, s, cat, op[0] == b'+');
    } else {
        return Err(ERR_SYNTAX);
    }
    Ok(())
}

/// One user rule (Redis's ACLSetUser). Selectors in parentheses are not supported.
pub fn set_user(acl: &Acl, u: &mut User, op: &[u8]) -> Result<(), &'static str> {
    if op.is_empty() {
        return Ok(());
    }
    let is = |w: &[u8]| op.eq_ignore_ascii_case(w);
    if is(b"on") {
        u.flags = (u.flags | FLAG_ON) & !FLAG_OFF;
    } else if is(b"off") {
        u.flags = (u.flags | FLAG_OFF) & !FLAG_ON;
    } else if is(b"skip-sanitize-payload") {
        u.flags = (u.flags | FLAG_SKIP_SANITIZE) & !FLAG_SANITIZE;
    } else if is(b"sanitize-payload") {
        u.flags = (u.flags | FLAG_SANITIZE) & !FLAG_SKIP_SANITIZE;
    } else if is(b"nopass") {
        u.flags |= FLAG_NOPASS;
        u.passwords.clear();
    } else if is(b"resetpass") {
        u.flags &= !FLAG_NOPASS;
        u.passwords.clear();
    } else if op[0] == b'>' || op[0] == b'#' {
        let h = if op[0] == b'>' {
            super::hash_password(&op[1..])
        } else {
            if !valid_hash(&op[1..]) {
                return Err(ERR_BAD_HASH);
            }
            op[1..].to_vec()
        };
        if !u.passwords.contains(&h) {
            u.passwords.push(h);
        }
        u.flags &= !FLAG_NOPASS;
    } else if op[0] == b'<' || op[0] == b'!' {
        let h = if op[0] == b'<' {
            super::hash_password(&op[1..])
        } else {
            if !valid_hash(&op[1..]) {
                return Err(ERR_BAD_HASH);
            }
            op[1..].to_vec()
        };
        match u.passwords.iter().position(|p| *p == h) {
            Some(i) => {
                u.passwords.remove(i);
            }
            None => return Err(ERR_NO_SUCH_PASS),
        }
    } else if is(b"clearselectors") {
        // Only the root selector exists here.
    } else if is(b"reset") {
        for r in [&b"resetpass"[..], b"resetkeys", b"resetchannels", b"off", b"sanitize-payload", b"-@all"] {
            set_user(acl, u, r)?;
        }
    } else {
        return set_selector(acl, &mut u.root, op);
    }
    Ok(())
}

fn push_word(out: &mut Vec<u8>, w: &[u8]) {
    out.extend_from_slice(w);
    out.push(b' ');
}

fn push_pattern(out: &mut Vec<u8>, p: &KeyPattern) {
    out.extend_from_slice(match p.flags {
        KEY_READ => b"%R~",
        KEY_WRITE => b"%W~",
        _ => b"~",
    });
    out.extend_from_slice(&p.pattern);
}

/// Emits `+cmd`/`-cmd` for every command whose bit still differs from `fake`, then the
/// allowed first-args (Redis's ACLDescribeSelectorCommandRulesSingleCommands).
fn single_commands(acl: &Acl, s: &Selector, fake: &mut Selector, out: &mut Vec<u8>) {
    for id in 0..acl.specs.len() {
        let bit = s.bit(id);
        if bit != fake.bit(id) {
            out.push(if bit { b'+' } else { b'-' });
            push_word(out, acl.specs[id].name.as_bytes());
            change_perm(acl, fake, id, bit);
        }
        if !bit && let Some(args) = s.firstargs.get(&id) {
            for a in args {
                out.push(b'+');
                out.extend_from_slice(acl.specs[id].name.as_bytes());
                out.push(b'|');
                push_word(out, a);
            }
        }
    }
}

fn count_category(acl: &Acl, s: &Selector, cat: u32) -> (usize, usize) {
    let (mut on, mut off) = (0, 0);
    for id in 0..acl.specs.len() {
        if acl.cats[id] & cat != 0 {
            if s.bit(id) {
                on += 1;
            } else {
                off += 1;
            }
        }
    }
    (on, off)
}

/// The command rules of a selector as ACL GETUSER shows them: +@all or -@all, the
/// categories that fit best, then single commands (Redis's ACLDescribeSelectorCommandRules).
pub fn describe_commands(acl: &Acl, s: &Selector) -> Vec<u8> {
    let mut out = Vec::new();
    let mut fake = Selector::empty();
    let additive = !s.bit(FUTURE_BIT);
    if additive {
        push_word(&mut out, b"-@all");
    } else {
        push_word(&mut out, b"+@all");
        set_all(&mut fake, true);
    }
    let mut temp = Selector::empty();
    temp.allowed = s.allowed;
    let names = crate::server::spec::acl_cat::NAMES;
    let mut applied = [false; 32];
    loop {
        let mut best = None;
        let (mut mindiff, mut maxsame) = (usize::MAX, 0);
        for (j, &(bit, _)) in names.iter().enumerate() {
            if applied[j] {
                continue;
            }
            let (on, off) = count_category(acl, &temp, bit);
            let (diff, same) = if additive { (off, on) } else { (on, off) };
            if same > diff && (diff < mindiff || (diff == mindiff && same > maxsame)) {
                best = Some(j);
                mindiff = diff;
                maxsame = same;
            }
        }
        let Some(j) = best else { break };
        let (bit, name) = names[j];
        set_category(acl, &mut fake, bit, additive);
        set_category(acl, &mut temp, bit, !additive);
        out.push(if additive { b'+' } else { b'-' });
        push_word(&mut out, name.as_bytes());
        applied[j] = true;
    }
    single_commands(acl, s, &mut fake, &mut out);
    out.pop();
    out
}

/// Key patterns as ACL GETUSER's "keys" field.
pub fn describe_keys(s: &Selector) -> Vec<u8> {
    if s.allkeys {
        return b"~*".to_vec();
    }
    let mut out = Vec::new();
    for (i, p) in s.patterns.iter().enumerate() {
        if i > 0 {
            out.push(b' ');
        }
        push_pattern(&mut out, p);
    }
    out
}

/// Channel patterns as ACL GETUSER's "channels" field.
pub fn describe_channels(s: &Selector) -> Vec<u8> {
    if s.allchannels {
        return b"&*".to_vec();
    }
    let mut out = Vec::new();
    for (i, c) in s.channels.iter().enumerate() {
        if i > 0 {
            out.push(b' ');
        }
        out.push(b'&');
        out.extend_from_slice(c);
    }
    out
}

fn describe_flags_and_passwords(u: &User, out: &mut Vec<u8>) {
    for &(f, name) in FLAG_NAMES {
        if u.flags & f != 0 {
            push_word(out, name.as_bytes());
        }
    }
    for p in &u.passwords {
        out.push(b'#');
        push_word(out, p);
    }
}

fn describe_keys_and_channels(s: &Selector, out: &mut Vec<u8>) {
    if s.allkeys {
        push_word(out, b"~*");
    } else {
        for p in &s.patterns {
            push_pattern(out, p);
            out.push(b' ');
        }
    }
    if s.allchannels {
        push_word(out, b"&*");
    } else {
        push_word(out, b"resetchannels");
        for c in &s.channels {
            out.push(b'&');
            push_word(out, c);
        }
    }
}

/// A user as ACL LIST shows it (Redis's ACLDescribeUser).
pub fn describe_user(acl: &Acl, u: &User) -> Vec<u8> {
    let mut out = Vec::new();
    describe_flags_and_passwords(u, &mut out);
    describe_keys_and_channels(&u.root, &mut out);
    out.extend_from_slice(&describe_commands(acl, &u.root));
    out
}

/// The rules that rebuild `u` exactly from a fresh user, independent of how categories
/// are defined: `reset`, flags, `#hashes`, keys, channels, then +@all/-@all and every
/// command that differs. This is what effects and snapshots carry.
pub fn exact_rules(acl: &Acl, u: &User) -> Vec<Vec<u8>> {
    let mut words: Vec<Vec<u8>> = Vec::new();
    words.push(b"reset".to_vec());
    let mut head = Vec::new();
    describe_flags_and_passwords(u, &mut head);
    describe_keys_and_channels(&u.root, &mut head);
    let s = &u.root;
    let mut fake = Selector::empty();
    if s.bit(FUTURE_BIT) {
        head.extend_from_slice(b"+@all ");
        set_all(&mut fake, true);
    } else {
        head.extend_from_slice(b"-@all ");
    }
    single_commands(acl, s, &mut fake, &mut head);
    for w in head.split(|&c| c == b' ') {
        if !w.is_empty() {
            words.push(w.to_vec());
        }
    }
    words
}
