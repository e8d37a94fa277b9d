// Command observability is a placeholder.
package main

func main() {}
