package guard

import "fmt"

// checkRegistryAuth refuses a registry credential id that could not be
// one of Runpod's: ids are short runs of letters, digits, '-' and '_'.
func checkRegistryAuth(id string) error {
	if id == "" {
		return nil
	}
	if len(id) > 64 {
		return fmt.Errorf("%d characters, more than 64", len(id))
	}
	for _, c := range id {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
		default:
			return fmt.Errorf("%q is not an id of letters, digits, '-' and '_' (see launch registries)", id)
		}
	}
	return nil
}
