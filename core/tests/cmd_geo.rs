//! GEO commands: exact replies recorded from redis-server 7.0.15 (RESP2 and RESP3), its
//! errors and their order, coordinates on the limits, scores that were never geohashes,
//! stores and the effects and keyspace events they emit, COMMAND GETKEYS. Random searches
//! over random point clouds are replayed against recorded replies by geo_oracle.rs.

mod cmdutil;
mod common;

use cmdutil::*;
use common::{H, NIL, OK, bulk, err, int};
use memoria_core::protocol::batch::{self, BatchWriter, OutputReader};
use memoria_core::protocol::resp::encode_command;

const WT: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
const SICILY: &str = "GEOADD Sicily 13.361389 38.115556 Palermo 15.087269 37.502669 Catania";
const PALERMO_POS: &str = "*2\r\n$20\r\n13.36138933897018433\r\n$20\r\n38.11555639549629859\r\n";
const CATANIA_POS: &str = "*2\r\n$20\r\n15.08726745843887329\r\n$20\r\n37.50266842333162032\r\n";

fn sicily() -> H {
    let mut h = H::new();
    ck(&mut h, SICILY, int(2));
    h
}

#[test]
fn add_positions_hashes_distances() {
    let mut h = sicily();
    ck(&mut h, "ZRANGE Sicily 0 -1 WITHSCORES", bulks(&["Palermo", "3479099956230698", "Catania", "3479447370796909"]));
    ck(&mut h, "GEODIST Sicily Palermo Catania", bulk("166274.1516"));
    ck(&mut h, "GEODIST Sicily Palermo Catania km", bulk("166.2742"));
    ck(&mut h, "GEODIST Sicily Palermo Catania KM", bulk("166.2742"));
    ck(&mut h, "GEODIST Sicily Palermo Catania mi", bulk("103.3182"));
    ck(&mut h, "GEODIST Sicily Palermo Catania ft", bulk("545518.8700"));
    ck(&mut h, "GEODIST Sicily Palermo Palermo", bulk("0.0000"));
    ck(&mut h, "GEODIST Sicily Palermo nosuch", NIL);
    ck(&mut h, "GEODIST nokey a b", NIL);
    ck(&mut h, "GEOPOS Sicily Palermo Catania NonExisting", format!("*3\r\n{PALERMO_POS}{CATANIA_POS}*-1\r\n"));
    ck(&mut h, "GEOPOS nokey a", "*1\r\n*-1\r\n");
    ck(&mut h, "GEOPOS Sicily", "*0\r\n");
    ck(&mut h, "GEOHASH Sicily Palermo Catania nosuch", format!("*3\r\n{}{}{NIL}", bulk("sqc8b49rny0"), bulk("sqdtr74hyu0")));
    ck(&mut h, "GEOHASH nokey a b", format!("*2\r\n{NIL}{NIL}"));
    ck(&mut h, "GEOHASH Sicily", "*0\r\n");
}

#[test]
fn geoadd_options() {
    let mut h = H::new();
    ck(&mut h, "GEOADD g 180 0 a -180 0 b 0 85.05112878 c 0 -85.05112878 d", int(4));
    ck(&mut h, "GEOADD g NX 1 1 a", int(0));
    ck(&mut h, "GEOADD g XX 1 1 zz", int(0));
    ck(&mut h, "GEOADD g XX CH 2 2 a", int(1));
    ck(&mut h, "GEOADD g CH 2 2 a 3 3 b 1 1 newm", int(2));
    ck(&mut h, "GEOADD g CH 2 2 a", int(0));
    ck(&mut h, "GEOADD g NX NX 2 2 a", int(0));
    ck(&mut h, "GEOADD g xx 2 2 a", int(0));
    ck(
        &mut h,
        "ZRANGE g 0 -1 WITHSCORES",
        bulks(&["d", "2251799813685248", "newm", "3377822707026402", "a", "3378191666521995", "b", "3379368329318596", "c", "6755399441055744"]),
    );
    ck(
        &mut h,
        "GEOPOS g a b c d",
        "*4\r\n*2\r\n$19\r\n2.00000256299972534\r\n$18\r\n2.0000001856465488\r\n*2\r\n$19\r\n2.99999982118606567\r\n$19\r\n3.00000091215010656\r\n\
         *2\r\n$19\r\n0.00000268220901489\r\n$19\r\n85.0511287799999991\r\n*2\r\n$19\r\n0.00000268220901489\r\n$21\r\n-85.05112751263942528\r\n",
    );
    ck(&mut h, "GEOHASH g a b c d", bulks(&["s037ms06g70", "s0d1h60s300", "up05b5048p0", "h0bh0hbj200"]));
}

#[test]
fn geoadd_errors() {
    let mut h = H::new();
    ck(&mut h, "GEOADD g 180.0000001 0 a", err("ERR invalid longitude,latitude pair 180.000000,0.000000"));
    ck(&mut h, "GEOADD g 0 85.05112879 a", err("ERR invalid longitude,latitude pair 0.000000,85.051129"));
    ck(&mut h, "GEOADD g 200 100 a", err("ERR invalid longitude,latitude pair 200.000000,100.000000"));
    ck(&mut h, "GEOADD g inf 0 a", err("ERR invalid longitude,latitude pair inf,0.000000"));
    ck(&mut h, "GEOADD g -inf nan a", err("ERR value is not a valid float"));
    ck(&mut h, "GEOADD g 1e-400 0 a", err("ERR value is not a valid float"));
    ck(&mut h, "GEOADD g x 0 a", err("ERR value is not a valid float"));
    let huge = "1000000000000000052504760255204420248704468581108159154915854115511802457988908195786371375080447864043704443832883878176942523235360430575644792184786706982848387200926575803737830233794788090059368953234970799945081119038967640880074652742780142494579258788820056842838115669472196386865459400540160.000000";
    ck(&mut h, "GEOADD g 1e300 0 a", err(&format!("ERR invalid longitude,latitude pair {huge},0.000000")));
    ck(&mut h, "GEOADD g 1 1", err("ERR wrong number of arguments for 'geoadd' command"));
    ck(&mut h, "GEOADD g nx", err("ERR wrong number of arguments for 'geoadd' command"));
    ck(&mut h, "GEOADD g 1 1 a 1 1", err("ERR syntax error"));
    ck(&mut h, "GEOADD g 1 1 a b", err("ERR syntax error"));
    ck(&mut h, "GEOADD g NX XX 1 1 a", err("ERR syntax error"));
    ck(&mut h, "GEOADD g ch xx nx 2 2 a", err("ERR syntax error"));
    ck(&mut h, "GEOADD g GT 2 2 a", err("ERR syntax error"));
    ck(&mut h, "GEOADD g nx 1 2", err("ERR syntax error"));
    ck(&mut h, "GEOADD g ch ch ch", err("ERR syntax error"));
    // A bad pair anywhere adds nothing.
    ck(&mut h, "GEOADD g 1 1 a 500 1 b", err("ERR invalid longitude,latitude pair 500.000000,1.000000"));
    ck(&mut h, "EXISTS g", int(0));
    // The arguments are checked before the key's type.
    ck(&mut h, "SET str x", OK);
    ck(&mut h, "GEOADD str 1 1 a 2", err("ERR syntax error"));
    ck(&mut h, "GEOADD str 1 x a", err("ERR value is not a valid float"));
    ck(&mut h, "GEOADD str 1 1 a", err(WT));
}

#[test]
fn reads_of_other_types_and_their_argument_errors() {
    let mut h = H::new();
    ck(&mut h, "SET str x", OK);
    for c in [
        "GEOPOS str a",
        "GEOHASH str a",
        "GEODIST str a b",
        "GEORADIUS str 1 1 1 m",
        "GEORADIUS_RO str 1 1 1 m",
        "GEORADIUSBYMEMBER str 1 1 m",
        "GEOSEARCH str FROMLONLAT 15 37 BYRADIUS 1 m",
        // The key is looked up before the arguments are read.
        "GEOSEARCH str FROMLONLAT 15 x BYRADIUS 1 m",
        "GEOSEARCH str FROMMEMBER a BYRADIUS 1 m",
        "GEOSEARCHSTORE d str FROMLONLAT 15 37 BYRADIUS 1 m",
    ] {
        ck(&mut h, c, err(WT));
    }
    // GEODIST reads its unit first.
    ck(&mut h, "GEODIST str a b xx", err("ERR unsupported unit provided. please use M, KM, FT, MI"));
    ck(&mut h, "GEODIST nokey a b xx", err("ERR unsupported unit provided. please use M, KM, FT, MI"));
    ck(&mut h, "GEODIST nokey a b km extra", err("ERR syntax error"));
    // A destination of another type is replaced.
    ck(&mut h, SICILY, int(2));
    ck(&mut h, "GEOSEARCHSTORE str Sicily FROMLONLAT 15 37 BYRADIUS 200 km", int(2));
    ck(&mut h, "TYPE str", "+zset\r\n");
}

#[test]
fn georadius_replies() {
    let mut h = sicily();
    let palermo_full = format!("*4\r\n{}{}:3479099956230698\r\n{PALERMO_POS}", bulk("Palermo"), bulk("190.4424"));
    let catania_full = format!("*4\r\n{}{}:3479447370796909\r\n{CATANIA_POS}", bulk("Catania"), bulk("56.4413"));
    ck(&mut h, "GEORADIUS Sicily 15 37 200 km WITHDIST WITHCOORD WITHHASH", format!("*2\r\n{palermo_full}{catania_full}"));
    ck(&mut h, "GEORADIUS_RO Sicily 15 37 200 km WITHHASH WITHCOORD WITHDIST", format!("*2\r\n{palermo_full}{catania_full}"));
    ck(&mut h, "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km ASC WITHCOORD WITHDIST WITHHASH", format!("*2\r\n{catania_full}{palermo_full}"));
    ck(&mut h, "GEORADIUS Sicily 15 37 200 km", bulks(&["Palermo", "Catania"]));
    ck(&mut h, "GEORADIUS Sicily 15 37 200 km ASC", bulks(&["Catania", "Palermo"]));
    ck(&mut h, "GEORADIUS Sicily 15 37 200 km DESC COUNT 1", bulks(&["Palermo"]));
    ck(&mut h, "GEORADIUS Sicily 15 37 200 km COUNT 1 ANY", bulks(&["Palermo"]));
    ck(&mut h, "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km COUNT 1", bulks(&["Catania"]));
    ck(&mut h, "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km COUNT 9223372036854775807", bulks(&["Catania", "Palermo"]));
    ck(
        &mut h,
        "GEORADIUSBYMEMBER Sicily Palermo 200 km WITHDIST",
        format!("*2\r\n*2\r\n{}{}*2\r\n{}{}", bulk("Palermo"), bulk("0.0000"), bulk("Catania"), bulk("166.2742")),
    );
    ck(
        &mut h,
        "GEOSEARCH Sicily FROMMEMBER Palermo BYBOX 400 400 km ASC WITHDIST",
        format!("*2\r\n*2\r\n{}{}*2\r\n{}{}", bulk("Palermo"), bulk("0.0000"), bulk("Catania"), bulk("166.2742")),
    );
    ck(&mut h, "GEOSEARCH Sicily FROMMEMBER Palermo BYBOX 400 400 km DESC", bulks(&["Catania", "Palermo"]));
    // Repeated options: the last one counts.
    ck(&mut h, "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km BYRADIUS 100 km", bulks(&["Catania"]));
    ck(&mut h, "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 200 200 km BYBOX 100 100 km", "*0\r\n");
    ck(&mut h, "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 200 200 km COUNT 1 COUNT 2", bulks(&["Catania"]));
    ck(&mut h, "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 200 200 km ASC DESC", bulks(&["Catania"]));
    ck(&mut h, "GEOSEARCH Sicily FROMMEMBER Palermo FROMMEMBER Catania BYRADIUS 200 km", bulks(&["Palermo", "Catania"]));
    ck(&mut h, "GEOSEARCH Sicily FROMLONLAT 15 37 FROMLONLAT 15 37 BYRADIUS 200 km", bulks(&["Palermo", "Catania"]));
    // Radii: infinite, zero (the centre's own cell only), hexadecimal.
    ck(&mut h, "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS inf km", bulks(&["Palermo", "Catania"]));
    ck(&mut h, "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX inf inf km", bulks(&["Palermo", "Catania"]));
    ck(&mut h, "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 0 km", "*0\r\n");
    ck(&mut h, "GEOSEARCH Sicily FROMMEMBER Palermo BYRADIUS 0 km WITHDIST", format!("*1\r\n*2\r\n{}{}", bulk("Palermo"), bulk("0.0000")));
    ck(&mut h, "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 0x10 km", "*0\r\n");
    // Missing keys: empty, whatever the member and (for BYMEMBER) the radius.
    ck(&mut h, "GEORADIUS nokey 15 37 200 km", "*0\r\n");
    ck(&mut h, "GEORADIUSBYMEMBER nokey nosuch abc km", "*0\r\n");
    ck(&mut h, "GEOSEARCH nokey FROMMEMBER nosuch BYRADIUS 200 km", "*0\r\n");
    ck(&mut h, "GEOSEARCH nokey FROMMEMBER x FROMMEMBER y BYRADIUS 200 km", "*0\r\n");
}

#[test]
fn search_errors() {
    let mut h = sicily();
    let unit = err("ERR unsupported unit provided. please use M, KM, FT, MI");
    let cases: &[(&str, String)] = &[
        ("GEORADIUS Sicily 15 37 200 km ANY", err("ERR the ANY argument requires COUNT argument")),
        ("GEORADIUS Sicily 15 37 200 km COUNT 0", err("ERR COUNT must be > 0")),
        ("GEORADIUS Sicily 15 37 200 km COUNT -1", err("ERR COUNT must be > 0")),
        ("GEORADIUS Sicily 15 37 200 km COUNT x", err("ERR value is not an integer or out of range")),
        ("GEOSEARCH Sicily FROMMEMBER Palermo BYRADIUS 1 km COUNT 99999999999999999999", err("ERR value is not an integer or out of range")),
        ("GEORADIUS Sicily 15 37 200 km COUNT", err("ERR syntax error")),
        (
            "GEORADIUS Sicily 15 37 200 km STORE dst WITHDIST",
            err("ERR STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and WITHCOORD options"),
        ),
        (
            "GEORADIUS Sicily 15 37 200 km STORE dst WITHHASH",
            err("ERR STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and WITHCOORD options"),
        ),
        ("GEORADIUS Sicily 1 1 1 km store d withcoord", err("ERR STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and WITHCOORD options")),
        ("GEORADIUS Sicily 1 1 1 km STORE", err("ERR syntax error")),
        ("GEORADIUS Sicily 1 1 1 km STOREDIST", err("ERR syntax error")),
        ("GEORADIUS Sicily 1 1 1 km COUNT 1 STORE", err("ERR syntax error")),
        ("GEORADIUS_RO Sicily 15 37 200 km STORE dst", err("ERR syntax error")),
        ("GEORADIUSBYMEMBER_RO Sicily Palermo 200 km STORE a", err("ERR syntax error")),
        ("GEORADIUS Sicily 15 37 200 km FROMMEMBER a", err("ERR syntax error")),
        ("GEORADIUS Sicily 200 37 200 km", err("ERR invalid longitude,latitude pair 200.000000,37.000000")),
        ("GEORADIUS nokey 200 37 200 km", err("ERR invalid longitude,latitude pair 200.000000,37.000000")),
        ("GEORADIUS Sicily 15 37 -1 km", err("ERR radius cannot be negative")),
        ("GEORADIUS Sicily 15 37 x km", err("ERR need numeric radius")),
        ("GEORADIUS Sicily 15 37 1 yd", unit.clone()),
        ("GEORADIUS Sicily x 37 1 km", err("ERR value is not a valid float")),
        ("GEORADIUS Sicily 15 x 1 km", err("ERR value is not a valid float")),
        ("GEORADIUS Sicily 15 37 1 km foo", err("ERR syntax error")),
        ("GEORADIUS Sicily 1 2", err("ERR wrong number of arguments for 'georadius' command")),
        ("GEORADIUSBYMEMBER Sicily nosuch 200 km WITHDIST", err("ERR could not decode requested zset member")),
        ("GEORADIUSBYMEMBER Sicily nosuch abc km", err("ERR could not decode requested zset member")),
        ("GEORADIUSBYMEMBER Sicily Palermo abc km", err("ERR need numeric radius")),
        ("GEORADIUSBYMEMBER nokey nosuch abc km WITHDIST foo", err("ERR syntax error")),
        ("GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km BYBOX 1 1 km", err("ERR syntax error")),
        ("GEOSEARCH Sicily FROMMEMBER Palermo BYBOX 1 1 km BYRADIUS 1 km", err("ERR syntax error")),
        ("GEOSEARCH Sicily FROMLONLAT 15 37 FROMMEMBER Palermo BYRADIUS 200 km", err("ERR syntax error")),
        ("GEOSEARCH Sicily FROMMEMBER Palermo FROMLONLAT 15 37 BYRADIUS 200 km", err("ERR syntax error")),
        ("GEOSEARCH Sicily FROMLONLAT 15 37", err("ERR wrong number of arguments for 'geosearch' command")),
        ("GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200", err("ERR syntax error")),
        ("GEOSEARCH Sicily FROMLONLAT 15 37 ASC WITHDIST", err("ERR exactly one of BYRADIUS and BYBOX can be specified for GEOSEARCH")),
        ("GEOSEARCH Sicily BYRADIUS 200 km ASC WITHDIST", err("ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for GEOSEARCH")),
        ("geosearch Sicily BYRADIUS 200 km ASC WITHDIST", err("ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for geosearch")),
        ("GEOSEARCH Sicily BYRADIUS 200 km ANY WITHDIST", err("ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for GEOSEARCH")),
        ("GEOSEARCH Sicily FROMMEMBER nosuch BYRADIUS 200 km", err("ERR could not decode requested zset member")),
        ("GEOSEARCH Sicily FROMMEMBER x BYRADIUS 200 km FROMMEMBER y", err("ERR could not decode requested zset member")),
        ("GEOSEARCH nokey FROMMEMBER x BYRADIUS 200 km ANY", err("ERR the ANY argument requires COUNT argument")),
        ("GEOSEARCH nokey FROMMEMBER nosuch BYRADIUS x km", err("ERR need numeric radius")),
        ("GEOSEARCH nokey FROMMEMBER nosuch BYBOX 1 x km", err("ERR need numeric height")),
        ("GEOSEARCH nokey FROMMEMBER nosuch BYBOX x 1 km", err("ERR need numeric width")),
        ("GEOSEARCH nokey FROMMEMBER nosuch BYBOX -1 1 km", err("ERR height or width cannot be negative")),
        ("GEOSEARCH nokey FROMMEMBER nosuch BYBOX 1 -1 km", err("ERR height or width cannot be negative")),
        ("GEOSEARCH nokey FROMMEMBER nosuch BYBOX 1 1 yd", unit),
        ("GEOSEARCH nokey FROMMEMBER nosuch BYRADIUS 1 km STORE x", err("ERR syntax error")),
        ("GEOSEARCH nokey FROMMEMBER nosuch BYRADIUS 1 km STOREDIST", err("ERR syntax error")),
        ("GEOSEARCH nokey FROMMEMBER x BYRADIUS 200 km WITHDIST STOREDIST", err("ERR syntax error")),
        ("GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 1e400 km", err("ERR need numeric radius")),
        ("GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS nan km", err("ERR need numeric radius")),
        ("GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 1e-400 km", err("ERR need numeric radius")),
        (
            "GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYRADIUS 200 km WITHDIST",
            err("ERR GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD options"),
        ),
        ("GEOSEARCHSTORE d Sicily FROMLONLAT 15 37 ASC WITHDIST", err("ERR GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD options")),
        ("GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYRADIUS 200 km STORE x", err("ERR syntax error")),
        ("GEOSEARCHSTORE d Sicily BYRADIUS 200 km ASC ASC", err("ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for GEOSEARCHSTORE")),
        ("GEOSEARCHSTORE dst nokey FROMLONLAT 15 37", err("ERR wrong number of arguments for 'geosearchstore' command")),
    ];
    for (c, want) in cases {
        ck(&mut h, c, want);
    }
    // A leading space is not a number.
    ckr(&mut h, &[b"GEOSEARCH", b"Sicily", b"FROMLONLAT", b"15", b"37", b"BYRADIUS", b" 1", b"km"], err("ERR need numeric radius"));
    ck(&mut h, "EXISTS dst d a x", int(0));
}

#[test]
fn limits_of_the_map() {
    let mut h = H::new();
    h.c("HELLO 3");
    ck(&mut h, "GEOADD e 180 0 x 179.9999 0.0001 y -180 0 z", int(3));
    // On the upper longitude the score carries one bit past the 52 (as in Redis).
    ck(
        &mut h,
        "ZRANGE e 0 -1 WITHSCORES",
        "*3\r\n*2\r\n$1\r\nz\r\n,1125899906842624\r\n*2\r\n$1\r\ny\r\n,4128299658423479\r\n*2\r\n$1\r\nx\r\n,10133099161583616\r\n",
    );
    ck(
        &mut h,
        "GEOPOS e x y z nosuch",
        "*4\r\n*2\r\n,180\r\n,0.00000126736058093\r\n*2\r\n,179.99990075826644897\r\n,0.00010012148579364\r\n\
         *2\r\n,-179.99999731779098511\r\n,0.00000126736058093\r\n_\r\n",
    );
    ck(&mut h, "GEOHASH e x y z", "*3\r\n$11\r\n80000000000\r\n$11\r\nxbpbpbpbtd0\r\n$11\r\n80000000000\r\n");
    ck(&mut h, "GEODIST e x z", bulk("0.2983"));
    ck(&mut h, "GEODIST e x nosuch", "_\r\n");
    let x = "*4\r\n$1\r\nx\r\n$6\r\n0.0001\r\n:10133099161583616\r\n*2\r\n,180\r\n,0.00000126736058093\r\n";
    let y = "*4\r\n$1\r\ny\r\n$6\r\n0.0157\r\n:4128299658423479\r\n*2\r\n,179.99990075826644897\r\n,0.00010012148579364\r\n";
    let z = "*4\r\n$1\r\nz\r\n$6\r\n0.0003\r\n:1125899906842624\r\n*2\r\n,-179.99999731779098511\r\n,0.00000126736058093\r\n";
    ck(&mut h, "GEOSEARCH e FROMLONLAT 180 0 BYRADIUS 100 km WITHCOORD WITHDIST WITHHASH", format!("*2\r\n{x}{y}"));
    // From -180 the west neighbour wraps to +180; from +180 the east one does not reach -180.
    ck(&mut h, "GEOSEARCH e FROMLONLAT -180 0 BYRADIUS 100 km WITHCOORD WITHDIST WITHHASH", format!("*2\r\n{z}{y}"));
    ck(&mut h, "GEOSEARCH e FROMLONLAT 179.9999 0 BYRADIUS 100 km", "*2\r\n$1\r\ny\r\n$1\r\nz\r\n");
    ck(&mut h, "GEOSEARCH e FROMLONLAT 180 0 BYBOX 100 100 km", "*2\r\n$1\r\nx\r\n$1\r\ny\r\n");
    ck(&mut h, "GEOSEARCH e FROMLONLAT 180 0 BYRADIUS 0 km WITHDIST", "*0\r\n");
    ck(&mut h, "GEOPOS nokey a", "*1\r\n_\r\n");
    ck(
        &mut h,
        "GEORADIUS e 180 0 100 km WITHCOORD",
        "*2\r\n*2\r\n$1\r\nx\r\n*2\r\n,180\r\n,0.00000126736058093\r\n*2\r\n$1\r\ny\r\n*2\r\n,179.99990075826644897\r\n,0.00010012148579364\r\n",
    );
    ck(&mut h, "GEOSEARCH e FROMLONLAT 180 0 BYRADIUS 100 km WITHHASH", "*2\r\n*2\r\n$1\r\nx\r\n:10133099161583616\r\n*2\r\n$1\r\ny\r\n:4128299658423479\r\n");
}

#[test]
fn scores_that_were_never_geohashes() {
    let mut h = H::new();
    ck(&mut h, "ZADD w -1 m1 1e30 m2 -1e30 m3 inf m4 -inf m5 1.5 m6 1e19 m7 9.3e18 m8 -2.5 m9", int(9));
    let max = "*2\r\n$3\r\n180\r\n$19\r\n85.0511287799999991\r\n";
    let min = "*2\r\n$22\r\n-179.99999731779098511\r\n$21\r\n-85.05112751263942528\r\n";
    let east_min = "*2\r\n$3\r\n180\r\n$21\r\n-85.05112751263942528\r\n";
    let one = "*2\r\n$22\r\n-179.99999731779098511\r\n$21\r\n-85.05112497791824921\r\n";
    ck(&mut h, "GEOPOS w m1 m2 m3 m4 m5 m6 m7 m8 m9", format!("*9\r\n{max}{min}{east_min}{min}{east_min}{one}{max}{max}{max}"));
    ck(
        &mut h,
        "GEOHASH w m1 m2 m3 m4 m5 m6 m7 m8 m9",
        bulks(&["bp05b5048p0", "00bh0hbj200", "00bh0hbj200", "00bh0hbj200", "00bh0hbj200", "00bh0hbj210", "bp05b5048p0", "bp05b5048p0", "bp05b5048p0"]),
    );
    ck(&mut h, "GEOSEARCH w FROMLONLAT 0 0 BYRADIUS inf m WITHHASH WITHCOORD", format!("*1\r\n*3\r\n$2\r\nm6\r\n:1\r\n{one}"));
    ck(&mut h, "GEOSEARCH w FROMMEMBER m6 BYRADIUS 10 m WITHHASH WITHCOORD WITHDIST", format!("*1\r\n*4\r\n$2\r\nm6\r\n$6\r\n0.0000\r\n:1\r\n{one}"));
    ck(&mut h, "GEODIST w m1 m2", bulk("18919844.5891"));
    // WITHHASH truncates a fractional score.
    ck(&mut h, "ZADD w2 1000.5 a 1000.7 b", int(2));
    let p = "*2\r\n$22\r\n-179.99983638525009155\r\n$20\r\n-85.0510666793315977\r\n";
    ck(
        &mut h,
        "GEOSEARCH w2 FROMMEMBER a BYRADIUS 10 m WITHHASH WITHCOORD WITHDIST",
        format!("*2\r\n*4\r\n$1\r\na\r\n$6\r\n0.0000\r\n:1000\r\n{p}*4\r\n$1\r\nb\r\n$6\r\n0.0000\r\n:1000\r\n{p}"),
    );
}

#[test]
fn resp3_replies() {
    let mut h = sicily();
    h.c("HELLO 3");
    ck(&mut h, "GEOPOS Sicily Palermo nosuch", "*2\r\n*2\r\n,13.36138933897018433\r\n,38.11555639549629859\r\n_\r\n");
    // Distances stay bulk strings; hashes are integers.
    ck(&mut h, "GEODIST Sicily Palermo Catania km", bulk("166.2742"));
    ck(&mut h, "GEODIST Sicily Palermo nosuch", "_\r\n");
    ck(&mut h, "GEOHASH Sicily Palermo nosuch", format!("*2\r\n{}_\r\n", bulk("sqc8b49rny0")));
    ck(
        &mut h,
        "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km ASC COUNT 1 WITHCOORD WITHDIST WITHHASH",
        format!("*1\r\n*4\r\n{}{}:3479447370796909\r\n*2\r\n,15.08726745843887329\r\n,37.50266842333162032\r\n", bulk("Catania"), bulk("56.4413")),
    );
    ck(&mut h, "GEORADIUS nokey 15 37 200 km", "*0\r\n");
}

#[test]
fn stores() {
    let mut h = sicily();
    ck(&mut h, "GEORADIUS Sicily 15 37 200 km STORE dst", int(2));
    ck(&mut h, "ZRANGE dst 0 -1 WITHSCORES", bulks(&["Palermo", "3479099956230698", "Catania", "3479447370796909"]));
    ck(&mut h, "GEORADIUS Sicily 15 37 200 km STOREDIST dst", int(2));
    ck(&mut h, "ZRANGE dst 0 -1 WITHSCORES", bulks(&["Catania", "56.441257870158204", "Palermo", "190.44242984775784"]));
    ck(&mut h, "GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYRADIUS 200 km", int(2));
    ck(&mut h, "ZRANGE dst 0 -1 WITHSCORES", bulks(&["Palermo", "3479099956230698", "Catania", "3479447370796909"]));
    ck(&mut h, "GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYRADIUS 200 km STOREDIST", int(2));
    ck(&mut h, "ZRANGE dst 0 -1 WITHSCORES", bulks(&["Catania", "56.441257870158204", "Palermo", "190.44242984775784"]));
    ck(&mut h, "GEORADIUSBYMEMBER Sicily Palermo 100 km STORE dst", int(1));
    ck(&mut h, "ZRANGE dst 0 -1", bulks(&["Palermo"]));
    // The last STORE/STOREDIST given wins.
    ck(&mut h, "GEORADIUS Sicily 15 37 200 km STORE a STOREDIST b", int(2));
    ck(&mut h, "EXISTS a b", int(1));
    ck(&mut h, "ZSCORE b Catania", bulk("56.441257870158204"));
    // COUNT keeps the nearest.
    ck(&mut h, "GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYRADIUS 200 km COUNT 1 STOREDIST", int(1));
    ck(&mut h, "ZRANGE dst 0 -1", bulks(&["Catania"]));
    // Nothing found, or no source: the destination is deleted.
    ck(&mut h, "GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYRADIUS 1 m", int(0));
    ck(&mut h, "EXISTS dst", int(0));
    ck(&mut h, "GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYRADIUS 1 m", int(0));
    ck(&mut h, "GEORADIUS Sicily 15 37 200 km STORE dst", int(2));
    ck(&mut h, "GEORADIUS nokey 15 37 200 km STORE dst", int(0));
    ck(&mut h, "EXISTS dst", int(0));
    ck(&mut h, "GEORADIUSBYMEMBER nokey nosuch abc km STORE dst", int(0));
    ck(&mut h, "GEOSEARCHSTORE dst nokey FROMLONLAT 15 37 BYRADIUS 1 m", int(0));
    // The stored value replaces the old one and its TTL, in the encoding its size calls for.
    ck(&mut h, "SET ttlkey x EX 100", OK);
    ck(&mut h, "GEOSEARCHSTORE ttlkey Sicily FROMLONLAT 15 37 BYRADIUS 1000 km", int(2));
    ck(&mut h, "TTL ttlkey", int(-1));
    ck(&mut h, "OBJECT ENCODING ttlkey", bulk("listpack"));
    ck(&mut h, "CONFIG SET zset-max-listpack-entries 1", OK);
    ck(&mut h, "GEOSEARCHSTORE big Sicily FROMLONLAT 15 37 BYRADIUS 1000 km", int(2));
    ck(&mut h, "OBJECT ENCODING big", bulk("skiplist"));
    // The source may be the destination.
    ck(&mut h, "GEOSEARCHSTORE Sicily Sicily FROMMEMBER Palermo BYRADIUS 1 km STOREDIST", int(1));
    ck(&mut h, "ZRANGE Sicily 0 -1 WITHSCORES", bulks(&["Palermo", "0"]));
}

#[test]
fn effects() {
    let mut h = H::new();
    // GEOADD is logged as the ZADD it is, options and all; nothing when nothing changed.
    ck(&mut h, "GEOADD g nx ch 13.361389 38.115556 Palermo 15.087269 37.502669 Catania", int(2));
    ck(&mut h, "GEOADD g 13.361389 38.115556 Palermo", int(0));
    ck(&mut h, "GEOADD g XX 1 1 Palermo 2 2 nosuch", int(0));
    let mark = fx_len(&h);
    ck(&mut h, "GEORADIUS g 15 37 200 km", bulks(&["Catania"]));
    ck(&mut h, "GEORADIUS g 15 37 200 km STORE d1", int(1));
    ck(&mut h, "GEOSEARCHSTORE d2 g FROMLONLAT 15 37 BYRADIUS 200 km STOREDIST", int(1));
    ck(&mut h, "GEOSEARCHSTORE d2 g FROMLONLAT 100 37 BYRADIUS 200 km", int(0));
    ck(&mut h, "GEOSEARCHSTORE d2 g FROMLONLAT 100 37 BYRADIUS 200 km", int(0));
    ck(&mut h, "GEORADIUS nokey 15 37 200 km STORE d1", int(0));
    ck(&mut h, "GEORADIUS nokey 15 37 200 km STORE d1", int(0));
    let all = h.effect_lines();
    assert_eq!(
        all[..mark],
        [
            "0:ZADD g NX CH 3479099956230698 Palermo 3479447370796909 Catania".to_string(),
            "0:ZADD g XX 3377822707026402 Palermo 3378191666521995 nosuch".to_string(),
        ]
    );
    assert_eq!(
        fx_since(&h, mark),
        [
            "0:GEORADIUS g 15 37 200 km STORE d1",
            "0:GEOSEARCHSTORE d2 g FROMLONLAT 15 37 BYRADIUS 200 km STOREDIST",
            "0:GEOSEARCHSTORE d2 g FROMLONLAT 100 37 BYRADIUS 200 km",
            "0:GEORADIUS nokey 15 37 200 km STORE d1",
        ]
    );
    // Replaying the effects rebuilds the same data.
    let mut r = H::new();
    for line in h.effect_lines() {
        let cmd = line.split_once(':').expect("db:command").1.to_string();
        r.c(&cmd);
    }
    for c in ["ZRANGE g 0 -1 WITHSCORES", "EXISTS d1 d2", "DBSIZE"] {
        assert_eq!(r.c(c), h.c(c), "{c}");
    }
}

/// Runs one command as client `who`; returns its reply and the pushes to other clients.
fn run(h: &mut H, who: u64, line: &str) -> (String, Vec<String>) {
    let args: Vec<&str> = line.split(' ').collect();
    let mut b = BatchWriter::new();
    b.begin(batch::REC_COMMAND, who);
    encode_command(&mut b.buf, &args);
    b.end();
    h.seed += 1;
    let out = h.e.execute(&b.buf, h.now_ms * 1000, h.seed);
    let (mut reply, mut pushes) = (String::new(), Vec::new());
    for rec in OutputReader::new(&out) {
        if rec.kind == batch::REC_CONFIG {
            continue; // host parameters after a CONFIG SET, for the host
        }
        if rec.kind == batch::REC_PUSH {
            pushes.push(String::from_utf8_lossy(rec.reply).into_owned());
        } else {
            h.effects.extend_from_slice(rec.effects);
            reply = String::from_utf8_lossy(rec.reply).into_owned();
        }
    }
    (reply, pushes)
}

#[test]
fn keyspace_events() {
    let mut h = H::new();
    run(&mut h, 9, "PSUBSCRIBE *");
    run(&mut h, 1, "CONFIG SET notify-keyspace-events KEA");
    let mut events = Vec::new();
    for line in [
        "GEOADD g 1 1 a 2 2 b",
        "GEOADD g 1 1 a",
        "GEOADD g XX 3 3 a",
        "GEORADIUS g 1 1 1000 km STORE d1",
        "GEORADIUSBYMEMBER g a 1000 km STOREDIST d2",
        "GEOSEARCHSTORE d3 g FROMLONLAT 1 1 BYRADIUS 1000 km",
        "GEOSEARCHSTORE d3 g FROMLONLAT 100 1 BYRADIUS 1 km",
        "GEORADIUS nokey 1 1 1000 km STORE d1",
        "GEORADIUS g 1 1 1000 km",
        "SET marker 1",
    ] {
        for p in run(&mut h, 1, line).1 {
            let items: Vec<&str> = p.split("\r\n").collect();
            events.push(format!("{} {}", items[6], items[8]));
        }
    }
    let want = [
        "__keyspace@0__:g zadd",
        "__keyevent@0__:zadd g",
        "__keyspace@0__:g zadd",
        "__keyevent@0__:zadd g",
        "__keyspace@0__:d1 georadiusstore",
        "__keyevent@0__:georadiusstore d1",
        "__keyspace@0__:d2 georadiusstore",
        "__keyevent@0__:georadiusstore d2",
        "__keyspace@0__:d3 geosearchstore",
        "__keyevent@0__:geosearchstore d3",
        "__keyspace@0__:d3 del",
        "__keyevent@0__:del d3",
        "__keyspace@0__:d1 del",
        "__keyevent@0__:del d1",
        "__keyspace@0__:marker set",
        "__keyevent@0__:set marker",
    ];
    assert_eq!(events, want);
}

#[test]
fn command_getkeys_and_info() {
    let mut h = H::new();
    let keys = |h: &mut H, c: &str| h.c(&format!("COMMAND GETKEYS {c}"));
    ck(&mut h, "COMMAND GETKEYS GEORADIUS k 1 2 3 m", bulks(&["k"]));
    ck(&mut h, "COMMAND GETKEYS GEORADIUS k 1 2 3 m STORE a", bulks(&["k", "a"]));
    ck(&mut h, "COMMAND GETKEYS GEORADIUS k 1 2 3 m store a", bulks(&["k", "a"]));
    ck(&mut h, "COMMAND GETKEYS GEORADIUS k 1 2 3 m STOREDIST a", bulks(&["k", "a"]));
    ck(&mut h, "COMMAND GETKEYS GEORADIUS k 1 2 3 m STORE a STOREDIST b", bulks(&["k", "a", "b"]));
    ck(&mut h, "COMMAND GETKEYS GEORADIUS k 1 2 3 m STOREDIST b STORE a", bulks(&["k", "a", "b"]));
    ck(&mut h, "COMMAND GETKEYS GEORADIUS k 1 2 3 m STORE", bulks(&["k"]));
    ck(&mut h, "COMMAND GETKEYS GEORADIUS k 1 2 3 STORE x", bulks(&["k"]));
    ck(&mut h, "COMMAND GETKEYS GEORADIUS k 1 2 3 m COUNT STORE", bulks(&["k"]));
    ck(&mut h, "COMMAND GETKEYS GEORADIUS k 1 2 3 m WITHDIST STORE x", bulks(&["k", "x"]));
    ck(&mut h, "COMMAND GETKEYS GEORADIUSBYMEMBER k m 3 km STORE x", bulks(&["k", "x"]));
    ck(&mut h, "COMMAND GETKEYS GEORADIUSBYMEMBER k m 3 STORE x y", bulks(&["k"]));
    ck(&mut h, "COMMAND GETKEYS GEORADIUSBYMEMBER k STORE 3 km STORE y", bulks(&["k", "y"]));
    ck(&mut h, "COMMAND GETKEYS GEORADIUS_RO k 1 2 3 m STORE a", bulks(&["k"]));
    ck(&mut h, "COMMAND GETKEYS GEOSEARCHSTORE d s FROMLONLAT 1 1 BYRADIUS 1 m", bulks(&["d", "s"]));
    ck(&mut h, "COMMAND GETKEYS GEOSEARCH s FROMLONLAT 1 1 BYRADIUS 1 m", bulks(&["s"]));
    ck(&mut h, "COMMAND GETKEYS GEOADD k 1 1 m", bulks(&["k"]));
    ck(&mut h, "COMMAND GETKEYS GEODIST k a b", bulks(&["k"]));
    ck(&mut h, "COMMAND GETKEYS GEOPOS k", bulks(&["k"]));
    ck(&mut h, "COMMAND GETKEYS GEORADIUS k 1 2", err("ERR Invalid number of arguments specified for command"));
    // Redis names only the first STORE's key; the command writes the last one's, which
    // the key tracker must see.
    assert_eq!(keys(&mut h, "GEORADIUS k 1 2 3 m STORE a STORE b"), bulks(&["k", "a", "b"]));
    // COMMAND INFO: name, arity, first/last/step and ACL categories as Redis 7.0.
    for (name, head) in [
        ("geoadd", "$6\r\ngeoadd\r\n:-5\r\n"),
        ("georadius", "$9\r\ngeoradius\r\n:-6\r\n"),
        ("geosearchstore", "$14\r\ngeosearchstore\r\n:-8\r\n"),
        ("georadius_ro", "$12\r\ngeoradius_ro\r\n:-6\r\n"),
    ] {
        let info = h.c(&format!("COMMAND INFO {name}"));
        assert!(info.starts_with(&format!("*1\r\n*10\r\n{head}")), "{info:?}");
    }
    let info = h.c("COMMAND INFO geosearchstore");
    assert!(info.contains("+write\r\n+denyoom\r\n:1\r\n:2\r\n:1\r\n*3\r\n+@write\r\n+@geo\r\n+@slow\r\n"), "{info:?}");
    let info = h.c("COMMAND INFO geosearch");
    assert!(info.contains("*1\r\n+readonly\r\n:1\r\n:1\r\n:1\r\n*3\r\n+@read\r\n+@geo\r\n+@slow\r\n"), "{info:?}");
    let mut names = parse_bulks(&h.c("COMMAND LIST FILTERBY ACLCAT geo"));
    names.sort();
    assert_eq!(
        names,
        ["geoadd", "geodist", "geohash", "geopos", "georadius", "georadius_ro", "georadiusbymember", "georadiusbymember_ro", "geosearch", "geosearchstore"]
    );
}

#[test]
fn count_ties_follow_redis_partial_sort() {
    // Recorded from redis-server 7.0.15: many members share a few positions, and COUNT
    // cuts the sorted result (the tie order is that of Redis's partial quicksort).
    let mut h = H::new();
    ck(
        &mut h,
        "GEOADD k 179.999903 -34.405363 m0 179.999902 -34.405362965975 m1 179.999903 -34.40536369544997 m2 179.999898 -34.405364 m3 \
         179.999898 -34.405367899495566 m4 179.999896 -34.405365 m5 179.999897 -34.405363 m6 179.99990164929542 -34.405360 m7 \
         180.000 -34.405364904757896 m8 180.000000 -34.405363 m9 180.000 -34.405363 m10 179.999904 -34.405360 m11 \
         179.999897 -34.40536262183029 m12 180.000 -85.05112878 m13 180.000 -34.40536642166665 m14 -180 -34.40536439606182 m15 \
         179.99989972189226 -34.40536659885011 m16 179.999898 -34.405360 m17 179.999897 -34.405 m18 180.000 -34.405 m19 \
         179.9999001418669 -34.405361 m20 179.999901 -34.405364 m21 180.000 -34.405360 m22 180.000 -34.405362 m23 \
         179.999899 -34.405361 m24 179.99989670107334 -34.405364 m25 179.9999010478788 -34.405366067029256 m26 \
         179.99989914418006 -34.405364 m27 179.999895 -34.405362 m28 179.999901 -34.405363 m29 179.999898 -34.405365 m30"
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .as_str(),
        int(31),
    );
    let q = "GEOSEARCH k FROMLONLAT 179.999897 -34.40536168869242 BYRADIUS 192545.36244021743 ft";
    ck(
        &mut h,
        q,
        bulks(&[
            "m4", "m30", "m5", "m12", "m25", "m3", "m6", "m16", "m26", "m0", "m1", "m2", "m21", "m27", "m29", "m17", "m28", "m20", "m24", "m7", "m11", "m18",
            "m15",
        ]),
    );
    ck(&mut h, &format!("{q} COUNT 5"), bulks(&["m28", "m17", "m6", "m12", "m25"]));
    ck(&mut h, &format!("{q} COUNT 9"), bulks(&["m28", "m17", "m6", "m12", "m25", "m3", "m7", "m20", "m24"]));
    // A full sort is stable.
    ck(
        &mut h,
        &format!("{q} ASC"),
        bulks(&[
            "m17", "m28", "m12", "m25", "m3", "m6", "m20", "m24", "m7", "m0", "m1", "m2", "m21", "m27", "m29", "m30", "m5", "m16", "m26", "m4", "m11", "m15",
            "m18",
        ]),
    );
}
