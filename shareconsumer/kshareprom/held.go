//go:build !hooksmerged

package kshareprom

import "github.com/kshare/kshare/shareconsumer"

// heldOf returns the records c holds now.
//
// Until main has Status.Held (branch hooks), this is Process's figure only; with the hooks
// merged, build with -tags hooksmerged (held_status.go), then delete this file and the tag.
func heldOf(c *shareconsumer.Consumer) int { return c.ProcessStats().Held }
