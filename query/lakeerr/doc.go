// Package lakeerr gives the errors of flightd's tables (packages lake,
// lakestream and logstore) the engine's sentinels (engine.ErrNotFound,
// engine.ErrRejected, ...), which the Flight SQL server maps to gRPC
// codes. It promises that Map keeps the error's text and chain (errors.Is
// still finds the original) and adds one sentinel, or none when the error
// is not one it knows.
package lakeerr
