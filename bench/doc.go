// Package bench compares idgen's generators with other libraries in the same run. It is its own
// module so that those libraries never become dependencies of idgen's libraries.
package bench
