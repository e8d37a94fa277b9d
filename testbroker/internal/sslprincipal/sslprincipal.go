// Package sslprincipal names the principal of a TLS client certificate as Kafka's
// DefaultKafkaPrincipalBuilder does: the subject's distinguished name in RFC 2253 form
// (X500Principal.getName()), mapped by ssl.principal.mapping.rules (SslPrincipalMapper).
package sslprincipal

import (
	"encoding/asn1"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// attribute is one attribute type and value of a name, its value kept as encoded.
type attribute struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

// rdnSET is a relative distinguished name (encoding/asn1 reads a type named *SET as a SET).
type rdnSET []attribute

// keywords are the attribute types RFC 2253 form names by keyword, as Java's X500Principal
// does; any other type is written as its OID and the hex of its encoded value.
var keywords = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"2.5.4.9":                    "STREET",
	"0.9.2342.19200300.100.1.25": "DC",
	"0.9.2342.19200300.100.1.1":  "UID",
}

// DistinguishedName writes a certificate's raw subject (x509.Certificate.RawSubject) in RFC
// 2253 form as X500Principal.getName() does: the last RDN first, RDNs joined by commas and the
// attributes of one by plus signs, values escaped.
func DistinguishedName(rawSubject []byte) (string, error) {
	var rdns []rdnSET
	rest, err := asn1.Unmarshal(rawSubject, &rdns)
	if err != nil {
		return "", fmt.Errorf("sslprincipal: subject: %w", err)
	}
	if len(rest) > 0 {
		return "", errors.New("sslprincipal: subject: trailing data")
	}
	var b strings.Builder
	for i := len(rdns) - 1; i >= 0; i-- {
		if i < len(rdns)-1 {
			b.WriteByte(',')
		}
		for j, a := range rdns[i] {
			if j > 0 {
				b.WriteByte('+')
			}
			writeAttribute(&b, a)
		}
	}
	return b.String(), nil
}

// writeAttribute writes one attribute: keyword=escaped string, or oid=#hex for a type without
// a keyword or a value that is not one of the strings Java writes as text.
func writeAttribute(b *strings.Builder, a attribute) {
	kw, ok := keywords[a.Type.String()]
	var s string
	if ok {
		s, ok = javaString(a.Value)
	}
	if !ok {
		if kw == "" {
			kw = a.Type.String()
		}
		b.WriteString(kw + "=#" + hex.EncodeToString(a.Value.FullBytes))
		return
	}
	b.WriteString(kw + "=")
	b.WriteString(escape(s))
}

// javaString decodes a value as Java's DerValue.getAsString does for the string types
// X500Principal writes as text, the bytes taken as they are (no check of a PrintableString's
// alphabet): PrintableString, IA5String and GeneralString as US-ASCII, T61String as Latin-1,
// UTF8String as UTF-8 and BMPString as UTF-16BE, bytes they cannot decode as U+FFFD. Any
// other value (a NumericString, for one) is written as hex.
func javaString(v asn1.RawValue) (string, bool) {
	if v.Class != asn1.ClassUniversal || v.IsCompound {
		return "", false
	}
	switch v.Tag {
	case asn1.TagPrintableString, asn1.TagIA5String, asn1.TagGeneralString:
		r := make([]rune, len(v.Bytes))
		for i, c := range v.Bytes {
			r[i] = rune(c)
			if c >= 0x80 {
				r[i] = utf8.RuneError
			}
		}
		return string(r), true
	case asn1.TagT61String:
		r := make([]rune, len(v.Bytes))
		for i, c := range v.Bytes {
			r[i] = rune(c)
		}
		return string(r), true
	case asn1.TagUTF8String:
		return strings.ToValidUTF8(string(v.Bytes), string(utf8.RuneError)), true
	case asn1.TagBMPString:
		u := make([]uint16, len(v.Bytes)/2)
		for i := range u {
			u[i] = binary.BigEndian.Uint16(v.Bytes[2*i:])
		}
		s := string(utf16.Decode(u))
		if len(v.Bytes)%2 != 0 {
			s += string(utf8.RuneError)
		}
		return s, true
	}
	return "", false
}

// escape escapes a value as RFC 2253 form does in Java: the special characters ,=+<>#;"\
// anywhere, NUL as \00, and leading and trailing spaces.
func escape(s string) string {
	var v strings.Builder
	for _, r := range s {
		switch {
		case strings.ContainsRune(`,=+<>#;"\`, r):
			v.WriteByte('\\')
			v.WriteRune(r)
		case r == 0:
			v.WriteString(`\00`)
		default:
			v.WriteRune(r)
		}
	}
	out := v.String()
	lead := len(out) - len(strings.TrimLeft(out, " \r"))
	trail := len(strings.TrimRight(out, " \r")) // the spaces from here on are trailing
	if lead == 0 && trail == len(out) {
		return out
	}
	var e strings.Builder
	for i := 0; i < len(out); i++ {
		if i < lead || i >= trail {
			e.WriteByte('\\')
		}
		e.WriteByte(out[i])
	}
	return e.String()
}

// rulePattern is one rule of ssl.principal.mapping.rules: DEFAULT, RULE:pattern/replacement/
// with an optional L or U, or anything else (refused unless empty).
const rulePattern = `(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)`

var (
	ruleSplitter = regexp.MustCompile(`\s*(` + rulePattern + `)\s*(,\s*|$)`)
	ruleParser   = regexp.MustCompile(`^(?:` + rulePattern + `)`)
)

// Mapper maps distinguished names to principal names by ssl.principal.mapping.rules.
type Mapper struct {
	rules []rule
}

// rule is DEFAULT (re nil) or a RULE.
type rule struct {
	re          *regexp.Regexp
	whole       *regexp.Regexp // re anchored at both ends, for Java's Matcher.matches
	replacement string
	lower       bool
	upper       bool
}

// NoMatchingRuleError is returned by Mapper.Name when no rule applies to a name.
type NoMatchingRuleError struct {
	DN    string
	Rules string
}

func (e *NoMatchingRuleError) Error() string {
	return "No rules apply to " + e.DN + ", rules " + e.Rules
}

// Parse reads ssl.principal.mapping.rules as SslPrincipalMapper does: comma-separated rules,
// empty ones ignored, with its messages for a rule it cannot read. A pattern is a Go regular
// expression (RE2), which has no back references or lookaround that Java's has.
func Parse(rules string) (*Mapper, error) {
	m := &Mapper{}
	for _, sm := range ruleSplitter.FindAllStringSubmatch(strings.TrimSpace(rules), -1) {
		r := sm[1]
		g := ruleParser.FindStringSubmatchIndex(r)
		if g == nil {
			return nil, errors.New("Invalid rule: " + r)
		}
		if g[1] != len(r) {
			return nil, fmt.Errorf("Invalid rule: `%s`, unmatched substring: `%s`", r, r[g[1]:])
		}
		switch {
		case g[2] >= 0:
			m.rules = append(m.rules, rule{})
		case g[4] >= 0:
			re, err := regexp.Compile(r[g[4]:g[5]])
			if err != nil {
				return nil, fmt.Errorf("Invalid rule: `%s`: %w", r, err)
			}
			flag := r[g[12]:g[13]]
			whole := regexp.MustCompile(`^(?:` + re.String() + `)$`)
			m.rules = append(m.rules, rule{re: re, whole: whole, replacement: r[g[8]:g[9]], lower: flag == "L", upper: flag == "U"})
		}
	}
	return m, nil
}

// Name returns the principal name of a distinguished name: that of the first rule that
// applies, or a *NoMatchingRuleError, or a *ReplacementError when the replacement of the rule
// that applies is one Java's Matcher refuses.
func (m *Mapper) Name(dn string) (string, error) {
	for _, r := range m.rules {
		name, ok, err := r.apply(dn)
		if err != nil {
			return "", err
		}
		if ok {
			return name, nil
		}
	}
	return "", &NoMatchingRuleError{DN: dn, Rules: m.String()}
}

// ReplacementError is a replacement that Java's Matcher refuses when a rule applies (SslPrincipalMapper
// passes it on, and the authentication fails): Msg is the exception's message, as "No group
// 1" for $1 in a rule without groups or "Illegal group reference" for a $ before neither a
// digit nor a {name}.
type ReplacementError struct {
	Rule string
	Msg  string
}

func (e *ReplacementError) Error() string {
	return "ssl.principal.mapping.rules: " + e.Rule + ": " + e.Msg
}

// String writes the rules as SslPrincipalMapper's toString does ("[DEFAULT, RULE:p/r/L]").
func (m *Mapper) String() string {
	parts := make([]string, len(m.rules))
	for i, r := range m.rules {
		parts[i] = r.String()
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func (r rule) String() string {
	if r.re == nil {
		return "DEFAULT"
	}
	s := "RULE:" + r.re.String() + "/" + r.replacement
	switch {
	case r.lower:
		s += "/L"
	case r.upper:
		s += "/U"
	}
	return s
}

// apply maps dn when the rule's pattern matches the whole of it: every match is replaced, the
// replacement's $n or ${name} naming a group and \c a literal c as in Java, and the result
// cased.
func (r rule) apply(dn string) (string, bool, error) {
	if r.re == nil {
		return dn, true, nil
	}
	if !r.whole.MatchString(dn) {
		return "", false, nil
	}
	var b strings.Builder
	last := 0
	for _, g := range r.re.FindAllStringSubmatchIndex(dn, -1) {
		b.WriteString(dn[last:g[0]])
		if msg := expand(&b, r.replacement, dn, g, r.re); msg != "" {
			return "", false, &ReplacementError{Rule: r.String(), Msg: msg}
		}
		last = g[1]
	}
	b.WriteString(dn[last:])
	out := b.String()
	switch {
	case r.lower:
		out = strings.ToLower(out)
	case r.upper:
		out = strings.ToUpper(out)
	}
	return out, true, nil
}

// expand writes a replacement for one match, or returns the message of the exception Java's
// Matcher throws for it. In a rule with groups, SslPrincipalMapper makes a $n naming no group
// literal text; in one without, Java refuses $1 to $9. $ takes as many digits as still name a
// group, as Java's does.
func expand(b *strings.Builder, repl, s string, g []int, re *regexp.Regexp) string {
	groups := re.NumSubexp()
	for i := 0; i < len(repl); i++ {
		c := repl[i]
		switch {
		case c == '\\':
			if i+1 == len(repl) {
				return "character to be escaped is missing"
			}
			i++
			b.WriteByte(repl[i])
		case c == '$':
			if i+1 == len(repl) {
				return "Illegal group reference: group index is missing"
			}
			if repl[i+1] == '{' {
				j := i + 2
				for j < len(repl) && isAlnum(repl[j]) {
					j++
				}
				name := repl[i+2 : j]
				switch {
				case name == "":
					return "named capturing group has 0 length name"
				case j == len(repl) || repl[j] != '}':
					return "named capturing group is missing trailing '}'"
				case isDigit(name[0]):
					return "capturing group name {" + name + "} starts with digit character"
				}
				n := re.SubexpIndex(name)
				if n < 0 {
					return "No group with name {" + name + "}"
				}
				if g[2*n] >= 0 {
					b.WriteString(s[g[2*n]:g[2*n+1]])
				}
				i = j
				continue
			}
			if !isDigit(repl[i+1]) {
				return "Illegal group reference"
			}
			n, j := int(repl[i+1]-'0'), i+2
			for j < len(repl) && isDigit(repl[j]) {
				next, err := strconv.Atoi(repl[i+1 : j+1])
				if err != nil || next > groups {
					break
				}
				n, j = next, j+1
			}
			switch {
			case n > groups && groups == 0:
				return "No group " + strconv.Itoa(n)
			case n > groups:
				b.WriteString(repl[i:j])
			case g[2*n] >= 0:
				b.WriteString(s[g[2*n]:g[2*n+1]])
			}
			i = j - 1
		default:
			b.WriteByte(c)
		}
	}
	return ""
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isAlnum(c byte) bool { return isDigit(c) || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
