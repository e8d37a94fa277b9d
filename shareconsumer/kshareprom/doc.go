// Package kshareprom is a placeholder.
package kshareprom
