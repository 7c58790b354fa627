// Command nosdk is a test plugin written against sdk/ABI.md without the SDK; see main.go
// (built only for GOOS=wasip1).
package main
