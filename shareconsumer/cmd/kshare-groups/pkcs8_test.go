package main

import (
	"encoding/asn1"
	"encoding/base64"
	"encoding/pem"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// withPBKDF2 returns the DER of the encrypted key keyPEM with its PBKDF2 parameters changed by
// edit.
func withPBKDF2(t *testing.T, keyPEM string, edit func(*pbkdf2Params)) []byte {
	t.Helper()
	block, _ := pem.Decode([]byte(keyPEM))
	require.NotNil(t, block)
	var info encryptedPrivateKeyInfo
	_, err := asn1.Unmarshal(block.Bytes, &info)
	require.NoError(t, err)
	var params pbes2Params
	_, err = asn1.Unmarshal(info.Algorithm.Parameters.FullBytes, &params)
	require.NoError(t, err)
	var kdf pbkdf2Params
	_, err = asn1.Unmarshal(params.KeyDerivationFunc.Parameters.FullBytes, &kdf)
	require.NoError(t, err)
	edit(&kdf)
	raw := func(v any) asn1.RawValue {
		b, err := asn1.Marshal(v)
		require.NoError(t, err)
		return asn1.RawValue{FullBytes: b}
	}
	params.KeyDerivationFunc.Parameters = raw(kdf)
	info.Algorithm.Parameters = raw(params)
	der, err := asn1.Marshal(info)
	require.NoError(t, err)
	return der
}

// TestDecryptPKCS8Refuses: a key whose PBKDF2 parameters ask for more iterations than the tool
// derives with is refused at once, saying what to do, and so is a key length the cipher does
// not take; a key length that matches the cipher decrypts.
func TestDecryptPKCS8Refuses(t *testing.T) {
	t.Parallel()
	p := pki()
	encrypted := encryptPKCS8(t, p.clientKey, "secret", nil) // AES-128-CBC
	for _, tc := range []struct {
		name string
		edit func(*pbkdf2Params)
		msg  string
	}{
		{"2^62 iterations", func(k *pbkdf2Params) { k.IterationCount = 1 << 62 },
			"PBKDF2 parameters: 4611686018427387904 iterations, more than the 10000000 this tool derives a key with: re-encrypt the key with fewer (openssl pkcs8 -topk8 -v2 aes-256-cbc -iter N)"},
		{"one iteration over", func(k *pbkdf2Params) { k.IterationCount = maxPBKDF2Iterations + 1 },
			"PBKDF2 parameters: 10000001 iterations, more than the 10000000 this tool derives a key with: re-encrypt the key with fewer (openssl pkcs8 -topk8 -v2 aes-256-cbc -iter N)"},
		{"no iterations", func(k *pbkdf2Params) { k.IterationCount = 0 }, "PBKDF2 parameters: no iterations"},
		{"AES-256 key length", func(k *pbkdf2Params) { k.KeyLength = 32 },
			"PBKDF2 parameters: a key of 32 bytes, but cipher 2.16.840.1.101.3.4.1.2 takes 16"},
		{"negative key length", func(k *pbkdf2Params) { k.KeyLength = -16 },
			"PBKDF2 parameters: a key of -16 bytes, but cipher 2.16.840.1.101.3.4.1.2 takes 16"},
	} {
		_, err := decryptPKCS8(withPBKDF2(t, encrypted, tc.edit), "secret")
		assert.EqualError(t, err, tc.msg, tc.name)
	}

	der, err := decryptPKCS8(withPBKDF2(t, encrypted, func(k *pbkdf2Params) { k.KeyLength = 16 }), "secret")
	require.NoError(t, err)
	want, _ := pem.Decode([]byte(p.clientKey))
	assert.Equal(t, want.Bytes, der)
}

// pemBlocks are the DER of the blocks of type typ in the file name of testdata.
func pemBlocks(f *testing.F, name, typ string) [][]byte {
	text, err := os.ReadFile("testdata/" + name)
	require.NoError(f, err)
	var ders [][]byte
	for rest := text; ; {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			return ders
		}
		if block.Type == typ {
			ders = append(ders, block.Bytes)
		}
	}
}

// FuzzDecryptPKCS8 decrypts any DER with any password without panicking; what decrypts is whole.
// Seeded with openssl's keys in testdata.
func FuzzDecryptPKCS8(f *testing.F) {
	for _, name := range []string{"openssl-encrypted-keystore.pem", "openssl-pbes1-keystore.pem"} {
		for _, der := range pemBlocks(f, name, "ENCRYPTED PRIVATE KEY") {
			f.Add(der, "kshare-secret")
			f.Add(der, "wrong")
		}
	}
	f.Fuzz(func(t *testing.T, der []byte, password string) {
		plain, err := decryptPKCS8(der, password)
		if err == nil && len(plain) >= len(der) {
			t.Fatalf("decrypted %d bytes from %d bytes of DER", len(plain), len(der))
		}
	})
}

// FuzzKeyPair reads any key store text without panicking: an error, or a certificate and its
// key. Seeded with openssl's key stores in testdata, encrypted and (decrypted here) not.
func FuzzKeyPair(f *testing.F) {
	for _, name := range []string{"openssl-encrypted-keystore.pem", "openssl-pbes1-keystore.pem"} {
		text, err := os.ReadFile("testdata/" + name)
		require.NoError(f, err)
		f.Add(string(text), string(text), true, "kshare-secret")
		f.Add(string(text), string(text), false, "")
	}
	for _, der := range pemBlocks(f, "openssl-encrypted-keystore.pem", "ENCRYPTED PRIVATE KEY") {
		plain, err := decryptPKCS8(der, "kshare-secret")
		require.NoError(f, err)
		key := "-----BEGIN PRIVATE KEY-----\n" + base64.StdEncoding.EncodeToString(plain) + "\n-----END PRIVATE KEY-----\n"
		for _, cert := range pemBlocks(f, "openssl-encrypted-keystore.pem", "CERTIFICATE") {
			chain := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert}))
			f.Add(key, chain, false, "")
			f.Add(key+chain, strings.ReplaceAll(chain, "\n", "\r\n"), false, "")
		}
	}
	f.Fuzz(func(t *testing.T, keyPEM, chainPEM string, encrypted bool, password string) {
		var pw *string
		if encrypted {
			pw = &password
		}
		pair, err := keyPair(keyPEM, chainPEM, pw)
		if err == nil && (len(pair.Certificate) == 0 || pair.PrivateKey == nil) {
			t.Fatalf("no error, but a key pair without certificate or key: %+v", pair)
		}
	})
}
