package baton

// MaxNameLen is the longest lock name baton accepts, in bytes after
// normalisation. It keeps every engine's key or path well inside its limits.
const MaxNameLen = 1024
