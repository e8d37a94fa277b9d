package main

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/asn1"
	"errors"
	"fmt"
	"hash"
)

// The object identifiers of an encrypted PKCS#8 key that decryptPKCS8 reads (RFC 8018).
var (
	oidPBES2      = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}
	oidPBKDF2     = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}
	oidHMACSHA1   = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 7}
	oidHMACSHA256 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 9}
	oidHMACSHA384 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 10}
	oidHMACSHA512 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 11}
	oidAES128CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 2}
	oidAES192CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 22}
	oidAES256CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 42}
)

// encryptedPrivateKeyInfo is PKCS#8's EncryptedPrivateKeyInfo.
type encryptedPrivateKeyInfo struct {
	Algorithm     algorithmIdentifier
	EncryptedData []byte
}

type algorithmIdentifier struct {
	Algorithm  asn1.ObjectIdentifier
	Parameters asn1.RawValue `asn1:"optional"`
}

type pbes2Params struct {
	KeyDerivationFunc algorithmIdentifier
	EncryptionScheme  algorithmIdentifier
}

type pbkdf2Params struct {
	Salt           []byte
	IterationCount int
	KeyLength      int                 `asn1:"optional"`
	PRF            algorithmIdentifier `asn1:"optional"`
}

// maxPBKDF2Iterations bounds the work a key's own parameters can ask of the tool: a count near
// 2^62 would derive for ever. OpenSSL writes 2048 and OWASP asks for at most 1,300,000
// (HMAC-SHA1), so real keys stay well below it.
const maxPBKDF2Iterations = 10_000_000

// errUnsupportedEncryption is returned for a key encrypted other than with PBES2, PBKDF2 and
// AES-CBC: the older PBES1 schemes (DES, RC2, RC4) Java knows are not read.
var errUnsupportedEncryption = errors.New("this tool reads keys encrypted with PBES2 (PBKDF2 with HMAC-SHA1, SHA-256, SHA-384 or SHA-512, AES-CBC) only, as openssl pkcs8 -topk8 -v2 aes-256-cbc writes them")

// decryptPKCS8 decrypts an EncryptedPrivateKeyInfo (the DER of a BEGIN ENCRYPTED PRIVATE KEY
// block) with password and returns the PKCS#8 PrivateKeyInfo it holds.
func decryptPKCS8(der []byte, password string) ([]byte, error) {
	var info encryptedPrivateKeyInfo
	if rest, err := asn1.Unmarshal(der, &info); err != nil || len(rest) > 0 {
		return nil, errors.New("not an encrypted PKCS#8 private key (ENCRYPTED PRIVATE KEY)")
	}
	if !info.Algorithm.Algorithm.Equal(oidPBES2) {
		return nil, fmt.Errorf("encryption %v: %w", info.Algorithm.Algorithm, errUnsupportedEncryption)
	}
	var params pbes2Params
	if _, err := asn1.Unmarshal(info.Algorithm.Parameters.FullBytes, &params); err != nil {
		return nil, fmt.Errorf("PBES2 parameters: %w", err)
	}
	if !params.KeyDerivationFunc.Algorithm.Equal(oidPBKDF2) {
		return nil, fmt.Errorf("key derivation %v: %w", params.KeyDerivationFunc.Algorithm, errUnsupportedEncryption)
	}
	var kdf pbkdf2Params
	if _, err := asn1.Unmarshal(params.KeyDerivationFunc.Parameters.FullBytes, &kdf); err != nil {
		return nil, fmt.Errorf("PBKDF2 parameters: %w", err)
	}
	if kdf.IterationCount < 1 {
		return nil, errors.New("PBKDF2 parameters: no iterations")
	}
	if kdf.IterationCount > maxPBKDF2Iterations {
		return nil, fmt.Errorf("PBKDF2 parameters: %d iterations, more than the %d this tool derives a key with: re-encrypt the key with fewer (openssl pkcs8 -topk8 -v2 aes-256-cbc -iter N)", kdf.IterationCount, maxPBKDF2Iterations)
	}
	prf, err := pbkdf2PRF(kdf.PRF.Algorithm)
	if err != nil {
		return nil, err
	}
	keyLen := map[string]int{oidAES128CBC.String(): 16, oidAES192CBC.String(): 24, oidAES256CBC.String(): 32}[params.EncryptionScheme.Algorithm.String()]
	if keyLen == 0 {
		return nil, fmt.Errorf("cipher %v: %w", params.EncryptionScheme.Algorithm, errUnsupportedEncryption)
	}
	if kdf.KeyLength != 0 && kdf.KeyLength != keyLen {
		return nil, fmt.Errorf("PBKDF2 parameters: a key of %d bytes, but cipher %v takes %d", kdf.KeyLength, params.EncryptionScheme.Algorithm, keyLen)
	}
	var iv []byte
	if _, err := asn1.Unmarshal(params.EncryptionScheme.Parameters.FullBytes, &iv); err != nil || len(iv) != aes.BlockSize {
		return nil, errors.New("AES-CBC parameters: not a 16 byte IV")
	}
	key, err := pbkdf2.Key(prf, password, kdf.Salt, kdf.IterationCount, keyLen)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	data := info.EncryptedData
	if len(data) == 0 || len(data)%aes.BlockSize != 0 {
		return nil, errors.New("encrypted data is not whole AES blocks")
	}
	plain := make([]byte, len(data))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(plain, data)
	// PKCS#7 padding; a wrong password almost always shows here.
	pad := int(plain[len(plain)-1])
	if pad == 0 || pad > aes.BlockSize || !bytes.Equal(plain[len(plain)-pad:], bytes.Repeat([]byte{byte(pad)}, pad)) {
		return nil, errors.New("the key does not decrypt with ssl.key.password (bad padding): wrong password?")
	}
	return plain[:len(plain)-pad], nil
}

// pbkdf2PRF is the hash of PBKDF2's pseudo-random function; HMAC-SHA1 when absent.
func pbkdf2PRF(oid asn1.ObjectIdentifier) (func() hash.Hash, error) {
	switch {
	case len(oid) == 0 || oid.Equal(oidHMACSHA1):
		return sha1.New, nil
	case oid.Equal(oidHMACSHA256):
		return sha256.New, nil
	case oid.Equal(oidHMACSHA384):
		return sha512.New384, nil
	case oid.Equal(oidHMACSHA512):
		return sha512.New, nil
	}
	return nil, fmt.Errorf("PBKDF2 function %v: %w", oid, errUnsupportedEncryption)
}
