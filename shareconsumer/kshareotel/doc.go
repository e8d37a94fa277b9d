// Package kshareotel is a placeholder.
package kshareotel
