package sim

import (
	"fmt"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"
)

// loadYAML reads mongod's YAML config file: every setting is looked up in
// the options table by its path and applied as the command line's would be.
func (c *Config) loadYAML(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return &OptionError{fmt.Sprintf("Error reading config file: %s", errText(err))}
	}
	var root map[string]any
	if err := yaml.Unmarshal(data, &root); err != nil {
		return &OptionError{fmt.Sprintf("Error parsing YAML config file: %v", err)}
	}
	flat := map[string]any{}
	flatten("", root, flat)
	mm := c.MajorMinor()
	for _, k := range sortedKeys(flat) {
		v := flat[k]
		o, ok := optionByYAML(k, mm)
		if !ok {
			return &OptionError{fmt.Sprintf("Error parsing YAML config file: Unrecognized option: %s", k)}
		}
		if list, isList := v.([]any); isList && k == "net.bindIp" {
			parts := make([]string, len(list))
			for i, x := range list {
				parts[i] = fmt.Sprint(x)
			}
			v = strings.Join(parts, ",")
		}
		if o.kind == optInt || o.kind == optDouble {
			if s, isStr := v.(string); isStr {
				if v, err = typedValue(o.kind, s); err != nil {
					return &OptionError{fmt.Sprintf("Error parsing YAML config file: Bad value for %s: %s", k, s)}
				}
			}
		}
		if err := c.set(o, "", k, v); err != nil {
			return err
		}
	}
	return nil
}

func flatten(prefix string, m map[string]any, out map[string]any) {
	for k, v := range m {
		key := k
		if prefix != "" {
			key = prefix + "." + k
		}
		sub, isMap := v.(map[string]any)
		switch {
		case isMap && key == "setParameter":
			for sk, sv := range sub {
				out["setParameter."+sk] = sv
			}
		case isMap:
			flatten(key, sub, out)
		default:
			out[key] = v
		}
	}
}
