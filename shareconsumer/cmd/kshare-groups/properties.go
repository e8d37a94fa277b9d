package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// parseProperties reads text in the format of Java's Properties.load, the format of Kafka's
// --command-config files: one key and value a line, separated by '=', ':' or whitespace;
// lines starting with '#' or '!' are comments; a line ending in an odd number of backslashes
// continues on the next, whose leading whitespace is dropped; backslash escapes \t \n \r \f
// and \uXXXX, and a backslash before any other character stands for that character. A later
// key replaces an earlier one, as in Java.
func parseProperties(text string) (map[string]string, error) {
	props := map[string]string{}
	lines := strings.Split(strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\r", "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimLeft(lines[i], " \t\f")
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		for continues(line) && i+1 < len(lines) {
			i++
			line = line[:len(line)-1] + strings.TrimLeft(lines[i], " \t\f")
		}
		if continues(line) {
			line = line[:len(line)-1]
		}
		key, value := splitProperty(line)
		k, err := unescapeProperty(key)
		if err != nil {
			return nil, err
		}
		v, err := unescapeProperty(value)
		if err != nil {
			return nil, err
		}
		props[k] = v
	}
	return props, nil
}

// continues reports whether line ends in an odd number of backslashes.
func continues(line string) bool {
	n := len(line) - len(strings.TrimRight(line, `\`))
	return n%2 == 1
}

// splitProperty splits a logical line at the first unescaped '=', ':' or whitespace, and the
// whitespace and one '=' or ':' after it.
func splitProperty(line string) (key, value string) {
	end := len(line)
	for i := 0; i < len(line); i++ {
		if line[i] == '\\' {
			i++
			continue
		}
		if strings.IndexByte("=: \t\f", line[i]) >= 0 {
			end = i
			break
		}
	}
	rest := strings.TrimLeft(line[end:], " \t\f")
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t\f")
	}
	return line[:end], rest
}

// unescapeProperty resolves the backslash escapes of a properties key or value.
func unescapeProperty(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+5 > len(s) {
				return "", errors.New(`Malformed \uxxxx encoding.`)
			}
			r, err := strconv.ParseUint(s[i+1:i+5], 16, 16)
			if err != nil {
				return "", errors.New(`Malformed \uxxxx encoding.`)
			}
			b.WriteRune(rune(r))
			i += 4
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), nil
}

// jaasEntry is one login module of a JAAS configuration: the class, its control flag and its
// options.
type jaasEntry struct {
	loginModule string
	controlFlag string // upper case: REQUIRED, REQUISITE, SUFFICIENT or OPTIONAL
	options     map[string]string
}

// parseJAAS parses the value of sasl.jaas.config as Kafka's JaasConfig does,
//
//	<loginModuleClass> <controlFlag> (<optionName>=<optionValue>)*;
//
// with Java's StreamTokenizer rules: // and /* */ comments, values quoted with " or ' (with
// backslash escapes) or bare words; a bare value that starts like a number (a digit, '.' or
// '-') is a number to the tokenizer and refused, as Kafka refuses it. A client's configuration
// has exactly one login module. The messages are Kafka's.
func parseJAAS(config string) (jaasEntry, error) {
	tz := &jaasTokenizer{s: config}
	var entries []jaasEntry
	for tz.next() != tokEOF {
		e, err := parseJAASEntry(tz)
		if err != nil {
			return jaasEntry{}, err
		}
		entries = append(entries, e)
	}
	switch len(entries) {
	case 0:
		return jaasEntry{}, errors.New("Login module not specified in JAAS config")
	case 1:
		return entries[0], nil
	}
	return jaasEntry{}, fmt.Errorf("JAAS config property contains %d login modules, should be 1 module", len(entries))
}

func parseJAASEntry(tz *jaasTokenizer) (jaasEntry, error) {
	e := jaasEntry{loginModule: tz.word, options: map[string]string{}}
	if tz.next() == tokEOF {
		return e, errors.New("Login module control flag not specified in JAAS config")
	}
	flag := strings.ToUpper(tz.word)
	switch flag {
	case "REQUIRED", "REQUISITE", "SUFFICIENT", "OPTIONAL":
		e.controlFlag = flag
	case "":
		return e, errors.New("Login module control flag is not available in the JAAS config")
	default:
		return e, fmt.Errorf("Invalid login module control flag '%s' in JAAS config", tz.word)
	}
	for {
		t := tz.next()
		if t == tokEOF || t == ';' {
			if t != ';' {
				return e, errors.New("JAAS config entry not terminated by semi-colon")
			}
			return e, nil
		}
		key := tz.word
		if tz.next() != '=' || tz.next() == tokEOF || !tz.hasWord {
			return e, fmt.Errorf("Value not specified for key '%s' in JAAS config", key)
		}
		e.options[key] = tz.word
	}
}

// Token kinds of jaasTokenizer besides a single ordinary character.
const (
	tokEOF    = -1
	tokWord   = -3
	tokNumber = -2
)

// jaasTokenizer splits a JAAS configuration as Java's StreamTokenizer does with Kafka's
// settings: words of letters, digits, '.', '-', '_' and '$' (and anything not ASCII);
// numbers; quoted strings; '/' starts a comment to the end of the line; every other character a
// token of its own.
type jaasTokenizer struct {
	s       string
	pos     int
	word    string // the word or quoted string of the last token; "" otherwise
	hasWord bool   // whether the last token was a word or a quoted string
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '.' || c == '-' || c == '_' || c == '$' || c >= 0x80
}

func (t *jaasTokenizer) next() int {
	t.word, t.hasWord = "", false
	for t.pos < len(t.s) {
		c := t.s[t.pos]
		switch {
		case c <= ' ':
			t.pos++
		case strings.HasPrefix(t.s[t.pos:], "/*"):
			end := strings.Index(t.s[t.pos+2:], "*/")
			if end < 0 {
				t.pos = len(t.s)
			} else {
				t.pos += 2 + end + 2
			}
		case c == '/':
			for t.pos < len(t.s) && t.s[t.pos] != '\n' && t.s[t.pos] != '\r' {
				t.pos++
			}
		case c >= '0' && c <= '9' || c == '.' || c == '-':
			for t.pos < len(t.s) && isWordByte(t.s[t.pos]) {
				t.pos++
			}
			return tokNumber
		case isWordByte(c):
			start := t.pos
			for t.pos < len(t.s) && isWordByte(t.s[t.pos]) {
				t.pos++
			}
			t.word, t.hasWord = t.s[start:t.pos], true
			return tokWord
		case c == '"' || c == '\'':
			t.word, t.hasWord = t.quoted(c), true
			return int(c)
		default:
			t.pos++
			return int(c)
		}
	}
	return tokEOF
}

// quoted reads a string quoted with q up to the closing quote or the end of the line, with
// StreamTokenizer's escapes: \a \b \f \n \r \t \v, octal \ooo, and \c for any other c.
func (t *jaasTokenizer) quoted(q byte) string {
	var b strings.Builder
	t.pos++
	for t.pos < len(t.s) {
		c := t.s[t.pos]
		t.pos++
		switch {
		case c == q:
			return b.String()
		case c == '\n' || c == '\r':
			t.pos--
			return b.String()
		case c == '\\' && t.pos < len(t.s):
			e := t.s[t.pos]
			t.pos++
			switch e {
			case 'a':
				b.WriteByte(7)
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'v':
				b.WriteByte('\v')
			default:
				if e >= '0' && e <= '7' {
					v := int(e - '0')
					for n := 1; n < 3 && t.pos < len(t.s) && t.s[t.pos] >= '0' && t.s[t.pos] <= '7' && v*8+int(t.s[t.pos]-'0') <= 0377; n++ {
						v = v*8 + int(t.s[t.pos]-'0')
						t.pos++
					}
					b.WriteByte(byte(v))
				} else {
					b.WriteByte(e)
				}
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
