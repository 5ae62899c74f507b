//! ZooKeeper's `x509` ids: the id `X509AuthenticationProvider` gives a client
//! with a TLS client certificate ([`subject_id`]), and which ids it accepts in
//! an `x509` ACL entry ([`valid_id`]).
//!
//! [`subject_id`] prints the certificate's subject as Java's
//! `X509Certificate.getSubjectX500Principal().getName()` does (RFC 2253):
//!
//! * RDNs last to first, joined by `,`; the attributes of a multi-valued RDN in
//!   their encoded order, joined by `+`;
//! * the RFC 2253 keywords `CN`, `C`, `L`, `ST`, `O`, `OU`, `STREET`, `DC`, `UID`
//!   when the value is a directory string (UTF8String, PrintableString,
//!   TeletexString, IA5String, GeneralString, BMPString); any other attribute
//!   (e.g. `emailAddress`) by its dotted OID; a value that is not a directory
//!   string, or of such an attribute, as `#hex` of the value's DER encoding
//!   (lower-case hex, as Java prints it);
//! * in string values, `, = + < > # ; " \` are escaped with `\` wherever they
//!   are, and so are leading and trailing spaces (Java's `AVA.toRFC2253String`).
//!
//! A small DER reader, not a certificate validator (the TLS layer verifies
//! certificates). Malformed input is `None` or `false`, never a panic.
//!
//! # Why the DER reading is written here
//!
//! What a crate could take over is the walk from the certificate to its
//! subject's attributes (about 70 lines: tag, length and contents; an OID's
//! dotted text). Everything after it (Java's keywords, hex, escaping and order,
//! and [`valid_id`]'s name parser) is ZooKeeper's format, which no crate prints.
//! The DER crates were tried against this module's tests, which pin what
//! ZooKeeper 3.8 prints, and measured (the crates each brings, and the CPU
//! seconds of a clean debug build of them alone on a shared 2-core machine,
//! where zk-proto itself takes about 1 s):
//!
//! * `x509-cert` 0.2, `der` 0.7, `const-oid` 0.9 (RustCrypto): `der` refuses a
//!   universal tag it has no name for (GeneralString, UniversalString:
//!   `TagUnknown`), so a subject Java prints (as text, as hex) would be lost;
//!   `const-oid` cannot read an OID under arc 2 with a second arc above 39
//!   (`2.999`: `NotEnoughArcs`); `x509-cert`'s `Name` sorts a multi-valued RDN
//!   into DER order, where Java keeps the encoded one. 10 crates (a proc-macro
//!   tree among them), 9.3 s; `der` alone 2 crates, 1.7 s.
//! * `x509-cert` 0.3, `der` 0.8: Rust 1.85, above the workspace's 1.75.
//! * `x509-parser` 0.18 (in the lock file as an optional dependency of rcgen
//!   that nothing turns on): its `asn1-rs` prints OID `2.999` as `3.16.55`, and
//!   its `X509Name` display is not Java's. 31 crates (two `syn`s, `nom`,
//!   `num-bigint`, `time`), 29 s.
//! * `rustls-webpki` (built already, for rustls): gives a certificate's subject
//!   only as raw bytes, after a parse that takes version 3 certificates only,
//!   and has no reader for names.
//!
//! So the reader stays: definite lengths of up to 4 bytes and low tag numbers,
//! anything else `None`; the tests run it over every truncation and byte flip of
//! a certificate. The certificates it reads are the client's own (as configured)
//! and, in `zk-testing`'s server, peer certificates rustls-webpki has verified.
//!
//! # Examples
//!
//! ```
//! use zk_proto::x509::valid_id;
//! assert!(valid_id("CN=app,O=Example"));
//! assert!(!valid_id("app"));
//! ```

/// One DER element: its tag, its contents and its whole encoding.
struct Tlv<'a> {
    tag: u8,
    content: &'a [u8],
    raw: &'a [u8],
}

/// Reads one DER element off the front of `input` (low tag numbers and definite
/// lengths up to 4 bytes only).
fn next<'a>(input: &mut &'a [u8]) -> Option<Tlv<'a>> {
    let all: &'a [u8] = input;
    let (&tag, rest) = all.split_first()?;
    if tag & 0x1f == 0x1f {
        return None;
    }
    let (&first, mut rest) = rest.split_first()?;
    let len = if first < 0x80 {
        usize::from(first)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let (bytes, after) = rest.split_at(n);
        rest = after;
        bytes.iter().fold(0usize, |acc, &b| (acc << 8) | usize::from(b))
    };
    if rest.len() < len {
        return None;
    }
    let header = all.len() - rest.len();
    let raw = &all[..header + len];
    let content = &rest[..len];
    *input = &rest[len..];
    Some(Tlv { tag, content, raw })
}

/// Reads an element that must have `tag`.
fn expect<'a>(input: &mut &'a [u8], tag: u8) -> Option<Tlv<'a>> {
    next(input).filter(|t| t.tag == tag)
}

const SEQUENCE: u8 = 0x30;
const SET: u8 = 0x31;
const OID: u8 = 0x06;

/// The `x509` id ZooKeeper gives a client presenting the DER certificate
/// `cert_der`: its subject in RFC 2253 form as Java prints it (see the module
/// documentation), or `None` if the certificate cannot be read.
///
/// # Examples
///
/// ```
/// // A certificate whose subject is O=Example, CN=app (in that order).
/// # let tlv = |tag: u8, c: &[u8]| [&[tag, c.len() as u8][..], c].concat();
/// # let atv = |oid: &[u8], v: &[u8]| tlv(0x31, &tlv(0x30, &[tlv(0x06, oid), tlv(0x0c, v)].concat()));
/// # let name = [atv(&[0x55, 4, 10], b"Example"), atv(&[0x55, 4, 3], b"app")].concat();
/// # let e = tlv(0x30, &[]);
/// # let tbs = [tlv(0x02, &[1]), e.clone(), e.clone(), e.clone(), tlv(0x30, &name), e.clone()].concat();
/// # let cert_der = tlv(0x30, &[tlv(0x30, &tbs), e.clone(), tlv(0x03, &[0])].concat());
/// assert_eq!(zk_proto::x509::subject_id(&cert_der).as_deref(), Some("CN=app,O=Example"));
/// assert_eq!(zk_proto::x509::subject_id(b"not a certificate"), None);
/// ```
pub fn subject_id(cert_der: &[u8]) -> Option<String> {
    let mut input = cert_der;
    let cert = expect(&mut input, SEQUENCE)?;
    let mut c = cert.content;
    let tbs = expect(&mut c, SEQUENCE)?;
    let mut t = tbs.content;
    if t.first() == Some(&0xa0) {
        next(&mut t)?; // [0] EXPLICIT version
    }
    expect(&mut t, 0x02)?; // serialNumber
    expect(&mut t, SEQUENCE)?; // signature
    expect(&mut t, SEQUENCE)?; // issuer
    expect(&mut t, SEQUENCE)?; // validity
    let subject = expect(&mut t, SEQUENCE)?;
    name_rfc2253(subject.content)
}

/// A Name's contents (a SEQUENCE OF RelativeDistinguishedName) in RFC 2253 form.
fn name_rfc2253(mut name: &[u8]) -> Option<String> {
    let mut rdns = Vec::new();
    while !name.is_empty() {
        let set = expect(&mut name, SET)?;
        let mut atvs = set.content;
        let mut parts = Vec::new();
        while !atvs.is_empty() {
            let atv = expect(&mut atvs, SEQUENCE)?;
            let mut a = atv.content;
            let oid = expect(&mut a, OID)?;
            let value = next(&mut a)?;
            if !a.is_empty() {
                return None;
            }
            parts.push(attribute(&oid_string(oid.content)?, &value));
        }
        if parts.is_empty() {
            return None;
        }
        rdns.push(parts.join("+"));
    }
    rdns.reverse();
    Some(rdns.join(","))
}

/// An OID's contents in dotted form.
fn oid_string(content: &[u8]) -> Option<String> {
    let mut arcs: Vec<u64> = Vec::new();
    let mut v: u64 = 0;
    let mut pending = false;
    for &b in content {
        if v > (u64::MAX >> 7) {
            return None;
        }
        v = (v << 7) | u64::from(b & 0x7f);
        pending = b & 0x80 != 0;
        if !pending {
            if arcs.is_empty() {
                let first = (v / 40).min(2);
                arcs.push(first);
                arcs.push(v - first * 40);
            } else {
                arcs.push(v);
            }
            v = 0;
        }
    }
    if pending || arcs.is_empty() {
        return None;
    }
    Some(arcs.iter().map(u64::to_string).collect::<Vec<_>>().join("."))
}

/// The RFC 2253 keyword of an attribute type (the ones Java prints by name).
fn keyword(oid: &str) -> Option<&'static str> {
    Some(match oid {
        "2.5.4.3" => "CN",
        "2.5.4.6" => "C",
        "2.5.4.7" => "L",
        "2.5.4.8" => "ST",
        "2.5.4.9" => "STREET",
        "2.5.4.10" => "O",
        "2.5.4.11" => "OU",
        "0.9.2342.19200300.100.1.25" => "DC",
        "0.9.2342.19200300.100.1.1" => "UID",
        _ => return None,
    })
}

/// A directory string's text, if `v` is one.
fn directory_string(v: &Tlv<'_>) -> Option<String> {
    match v.tag {
        0x0c => Some(String::from_utf8_lossy(v.content).into_owned()), // UTF8String
        0x14 => Some(v.content.iter().map(|&b| char::from(b)).collect()), // TeletexString: ISO-8859-1
        0x13 | 0x16 | 0x1b => Some(
            // PrintableString, IA5String, GeneralString: ASCII
            v.content
                .iter()
                .map(|&b| {
                    if b.is_ascii() {
                        char::from(b)
                    } else {
                        char::REPLACEMENT_CHARACTER
                    }
                })
                .collect(),
        ),
        0x1e if v.content.len() % 2 == 0 => {
            // BMPString: UTF-16BE
            let units: Vec<u16> = v
                .content
                .chunks_exact(2)
                .map(|p| u16::from_be_bytes([p[0], p[1]]))
                .collect();
            Some(String::from_utf16_lossy(&units))
        }
        _ => None,
    }
}

/// One `type=value` in RFC 2253 form.
fn attribute(oid: &str, value: &Tlv<'_>) -> String {
    match (keyword(oid), directory_string(value)) {
        (Some(k), Some(text)) => format!("{k}={}", escape(&text)),
        (k, _) => {
            let hex: String = value.raw.iter().map(|b| format!("{b:02x}")).collect();
            format!("{}=#{hex}", k.unwrap_or(oid))
        }
    }
}

/// Java's RFC 2253 escaping: the special characters anywhere, and leading and
/// trailing spaces (and carriage returns).
fn escape(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let blank = |c: &char| *c == ' ' || *c == '\r';
    let lead = chars.iter().take_while(|c| blank(c)).count();
    let trail = chars.len() - chars.iter().rev().take_while(|c| blank(c)).count();
    let mut out = String::with_capacity(text.len() + 4);
    for (i, &c) in chars.iter().enumerate() {
        if ",=+<>#;\"\\".contains(c) || i < lead || i >= trail {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Whether ZooKeeper accepts `id` in an `x509` ACL entry:
/// `X509AuthenticationProvider.isValid` is `new X500Principal(id)` not
/// throwing. This follows the parts of Java's (non-strict) distinguished-name
/// parser that decide validity: the empty name; RDNs split at unquoted,
/// unescaped `,` and `;`, attributes at `+`, none empty; a type that is a known
/// keyword (any case) or a dotted OID (optionally `OID.`-prefixed); a value that
/// is `#` and the hex of one DER element, a quoted string followed by nothing
/// but spaces, or a string whose escapes are `\` and a special character or a
/// hex pair and which has no bare `<`, `>` or `"`.
///
/// # Examples
///
/// ```
/// use zk_proto::x509::valid_id;
/// assert!(valid_id("CN=app,O=Example") && valid_id("") && valid_id("1.2.3=#0c0161"));
/// assert!(!valid_id("garbage") && !valid_id("CN=a,") && !valid_id("XX=a"));
/// ```
pub fn valid_id(id: &str) -> bool {
    id.is_empty()
        || split_unquoted(id, &[',', ';'])
            .into_iter()
            .all(|rdn| split_unquoted(rdn, &['+']).into_iter().all(valid_ava))
}

/// `s` split at the `seps` outside quotes and not escaped.
fn split_unquoted<'a>(s: &'a str, seps: &[char]) -> Vec<&'a str> {
    let mut parts = Vec::new();
    let (mut start, mut quoted, mut escaped) = (0, false, false);
    for (i, c) in s.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == '"' {
            quoted = !quoted;
        } else if !quoted && seps.contains(&c) {
            parts.push(&s[start..i]);
            start = i + c.len_utf8();
        }
    }
    parts.push(&s[start..]);
    parts
}

/// Java's keywords for attribute types (`AVAKeyword`, any case).
const KEYWORDS: &[&str] = &[
    "CN",
    "C",
    "L",
    "S",
    "ST",
    "O",
    "OU",
    "T",
    "IP",
    "STREET",
    "DC",
    "DNQUALIFIER",
    "DNQ",
    "SURNAME",
    "GIVENNAME",
    "INITIALS",
    "GENERATION",
    "EMAIL",
    "EMAILADDRESS",
    "UID",
    "SERIALNUMBER",
];

fn valid_ava(ava: &str) -> bool {
    let Some((ty, value)) = ava.split_once('=') else {
        return false;
    };
    let ty = ty.trim_matches(|c: char| c <= ' ').to_ascii_uppercase();
    let type_ok = KEYWORDS.contains(&ty.as_str()) || {
        let (oid, prefixed) = match ty.strip_prefix("OID.") {
            Some(rest) => (rest, true),
            None => (ty.as_str(), false),
        };
        (prefixed || oid.starts_with(|c: char| c.is_ascii_digit())) && valid_dotted_oid(oid)
    };
    type_ok && valid_value(value.trim_start_matches([' ', '\n']))
}

fn valid_dotted_oid(oid: &str) -> bool {
    let arcs: Option<Vec<u64>> = oid
        .split('.')
        .map(|a| {
            if a.is_empty() || !a.bytes().all(|b| b.is_ascii_digit()) {
                None
            } else {
                a.parse().ok()
            }
        })
        .collect();
    match arcs.as_deref() {
        Some([first, second, ..]) => *first <= 2 && (*first == 2 || *second < 40),
        _ => false,
    }
}

fn valid_value(v: &str) -> bool {
    if let Some(hex) = v.strip_prefix('#') {
        if hex.is_empty() || hex.len() % 2 != 0 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return false;
        }
        let bytes: Vec<u8> = (0..hex.len())
            .step_by(2)
            .filter_map(|i| u8::from_str_radix(&hex[i..i + 2], 16).ok())
            .collect();
        let mut rest = bytes.as_slice();
        return next(&mut rest).is_some() && rest.is_empty();
    }
    let mut chars = v.chars();
    let quoted = v.starts_with('"');
    if quoted {
        chars.next();
    }
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(h) if h.is_ascii_hexdigit() => {
                    if !chars.next().is_some_and(|l| l.is_ascii_hexdigit()) {
                        return false;
                    }
                }
                Some(s) if ",=\n+<>#;\\\" ".contains(s) => {}
                _ => return false,
            },
            '"' if quoted => return chars.all(|c| c == ' ' || c == '\n'),
            '<' | '>' | '"' if !quoted => return false,
            _ => {}
        }
    }
    !quoted
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
        let mut v = vec![tag];
        let n = content.len();
        if n < 0x80 {
            v.push(n as u8);
        } else if n < 0x100 {
            v.extend([0x81, n as u8]);
        } else {
            v.extend([0x82, (n >> 8) as u8, n as u8]);
        }
        v.extend_from_slice(content);
        v
    }

    fn atv(oid: &[u8], tag: u8, value: &[u8]) -> Vec<u8> {
        tlv(SEQUENCE, &[tlv(OID, oid), tlv(tag, value)].concat())
    }

    const CN: &[u8] = &[0x55, 0x04, 0x03];
    const O: &[u8] = &[0x55, 0x04, 0x0a];
    const C: &[u8] = &[0x55, 0x04, 0x06];
    const DC: &[u8] = &[0x09, 0x92, 0x26, 0x89, 0x93, 0xf2, 0x2c, 0x64, 0x01, 0x19];
    const EMAIL: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x09, 0x01];

    /// A certificate whose subject is these RDNs (each a list of ATVs).
    fn cert(rdns: &[Vec<Vec<u8>>]) -> Vec<u8> {
        let name: Vec<u8> = rdns.iter().flat_map(|r| tlv(SET, &r.concat())).collect();
        let tbs = [
            tlv(0xa0, &tlv(0x02, &[2])),
            tlv(0x02, &[0x01, 0x02]),
            tlv(SEQUENCE, &tlv(OID, &[0x2a, 0x03])),
            tlv(SEQUENCE, &[]),
            tlv(SEQUENCE, &[]),
            tlv(SEQUENCE, &name),
            tlv(SEQUENCE, &[]),
        ]
        .concat();
        tlv(
            SEQUENCE,
            &[tlv(SEQUENCE, &tbs), tlv(SEQUENCE, &[]), tlv(0x03, &[0])].concat(),
        )
    }

    #[test]
    fn rdns_are_printed_last_first() {
        let c = cert(&[
            vec![atv(C, 0x13, b"US")],
            vec![atv(O, 0x0c, b"Example")],
            vec![atv(CN, 0x0c, b"app")],
        ]);
        assert_eq!(subject_id(&c).as_deref(), Some("CN=app,O=Example,C=US"));
    }

    #[test]
    fn special_characters_and_edge_spaces_are_escaped() {
        let c = cert(&[
            vec![atv(O, 0x0c, b"Example, Inc.")],
            vec![atv(CN, 0x0c, b" a+b=c<d>e#f;g\"h\\i ")],
        ]);
        assert_eq!(
            subject_id(&c).as_deref(),
            Some(r#"CN=\ a\+b\=c\<d\>e\#f\;g\"h\\i\ ,O=Example\, Inc."#)
        );
    }

    #[test]
    fn unknown_attributes_and_non_string_values_are_hex() {
        let c = cert(&[
            vec![atv(DC, 0x16, b"org")],
            vec![atv(EMAIL, 0x16, b"a@b"), atv(CN, 0x02, &[5])],
        ]);
        assert_eq!(
            subject_id(&c).as_deref(),
            Some("1.2.840.113549.1.9.1=#1603614062+CN=#020105,DC=org")
        );
    }

    #[test]
    fn bmp_teletex_and_utf8_strings_decode() {
        let c = cert(&[vec![
            atv(CN, 0x1e, &[0x00, 0xe9, 0x00, 0x41]),
            atv(O, 0x14, &[0xe9]),
            atv(C, 0x0c, "é".as_bytes()),
        ]]);
        assert_eq!(subject_id(&c).as_deref(), Some("CN=éA+O=é+C=é"));
    }

    #[test]
    fn general_strings_are_text_universal_strings_hex_and_large_oid_arcs_dotted() {
        // What the DER crates lose (see the module documentation): a
        // GeneralString is a directory string, a UniversalString is printed as
        // hex (Java's AVA does the same), and an attribute 2.999 keeps its OID.
        let c = cert(&[
            vec![atv(CN, 0x1b, b"gen")],
            vec![atv(O, 0x1c, &[0, 0, 0, b'a'])],
            vec![atv(&[0x88, 0x37], 0x0c, b"a")],
        ]);
        assert_eq!(subject_id(&c).as_deref(), Some("2.999=#0c0161,O=#1c0400000061,CN=gen"));
    }

    #[test]
    fn long_lengths_and_an_empty_subject() {
        let long = "x".repeat(300);
        let c = cert(&[vec![atv(CN, 0x0c, long.as_bytes())]]);
        assert_eq!(subject_id(&c), Some(format!("CN={long}")));
        assert_eq!(subject_id(&cert(&[])).as_deref(), Some(""));
    }

    #[test]
    fn oids_decode_with_large_arcs() {
        assert_eq!(oid_string(&[0x55, 0x04, 0x03]).as_deref(), Some("2.5.4.3"));
        assert_eq!(oid_string(DC).as_deref(), Some("0.9.2342.19200300.100.1.25"));
        assert_eq!(oid_string(&[0x88, 0x37]).as_deref(), Some("2.999"));
        assert_eq!(oid_string(&[0x55, 0x84]), None, "a last byte with the continuation bit");
        assert_eq!(oid_string(&[]), None);
        assert_eq!(oid_string(&[0xff; 12]), None, "an arc too large for u64");
    }

    #[test]
    fn malformed_input_is_none_never_a_panic() {
        let good = cert(&[vec![atv(CN, 0x0c, b"app")]]);
        // Every truncation and every single-byte corruption of a good certificate.
        for n in 0..good.len() {
            let _ = subject_id(&good[..n]);
            for flip in [0x00, 0x80, 0xff, 0x1f] {
                let mut bad = good.clone();
                bad[n] ^= flip;
                let _ = subject_id(&bad);
            }
        }
        assert_eq!(subject_id(&good[..good.len() - 1]), None);
        assert_eq!(subject_id(&[]), None);
        assert_eq!(subject_id(&[0x30, 0x80]), None, "indefinite length");
        assert_eq!(subject_id(&[0x30, 0x85, 1, 1, 1, 1, 1]), None, "a 5-byte length");
        assert_eq!(
            subject_id(&[0x30, 0x84, 0xff, 0xff, 0xff, 0xff]),
            None,
            "longer than the input"
        );
        assert_eq!(subject_id(&[0x3f, 0x01, 0x00]), None, "a high tag number");
        // An RDN with no attributes, an attribute with trailing data.
        assert_eq!(subject_id(&cert(&[vec![]])), None);
        let extra = tlv(SEQUENCE, &[tlv(OID, CN), tlv(0x0c, b"a"), tlv(0x0c, b"b")].concat());
        assert_eq!(subject_id(&cert(&[vec![extra]])), None);
    }
    #[test]
    fn x500_names_as_java_accepts_them() {
        for ok in [
            "",
            "CN=app",
            "cn = a",
            "CN=",
            "CN=a;O=b",
            "CN=a+O=b",
            "CN=a, O=b",
            " CN=a",
            r#"CN="a,b""#,
            r"CN=a\,b",
            r"CN=a\41",
            "2.5.4.3=a",
            "OID.2.5.4.3=a",
            "oid.2.5.4.3=a",
            "1.2.3=#0c0161",
            "CN=a=b",
            r#"CN="a"  "#,
            "EMAILADDRESS=a@b",
            "SERIALNUMBER=1",
            "CN=a\n",
        ] {
            assert!(valid_id(ok), "{ok:?}");
        }
        for bad in [
            "garbage",
            "CN=a,garbage",
            "=a",
            "XX=a",
            "1.2.3=#0c01",
            r"CN=a\",
            "CN=a,",
            "CN=#zz",
            r"CN=a\q",
            r"CN=a\4",
            "1.2.3=#0c0161 ",
            r#"CN="a" b"#,
            r#"CN="a"#,
            "CN=a<b",
            r#"CN=a"b"#,
            " ",
            "CN=a,,O=b",
            "OID.2=a",
            "3.1=a",
            "1.40=a",
            "CN=#0c01",
            "CN=a+",
            "XYZ.1=a",
        ] {
            assert!(!valid_id(bad), "{bad:?}");
        }
        // Every prefix of tricky ids: an answer, never a panic.
        for id in [r#"CN=\ a\41"é\"+OID.2.5.4.3=#0c02c3a9;O="x,y"  ,DC=é\"#, "1.2.3=#0c81"] {
            for (i, _) in id.char_indices() {
                let _ = valid_id(&id[..i]);
            }
        }
    }
}
