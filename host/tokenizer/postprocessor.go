package tokenizer

import (
	"encoding/json"
	"fmt"
)

// postProcessor is the single-sequence part of tokenizers' post-processors: the special
// token ids placed before and after the encoded text when add_special_tokens is true
// (e.g. Llama 3.1's and Gemma 3's TemplateProcessing prepend BOS).
type postProcessor struct {
	before, after []int32
}

// buildPostProcessor reads a "post_processor" node; path names it in errors.
func buildPostProcessor(n *jNode, file, path string) (postProcessor, error) {
	var pp postProcessor
	return pp, pp.add(n, file, path)
}

func (pp *postProcessor) add(n *jNode, file, path string) error {
	if n == nil {
		return nil
	}
	switch n.Type {
	case "ByteLevel":
		return nil // adjusts offsets only
	case "Sequence":
		for i := range n.Processors {
			if err := pp.add(&n.Processors[i], file, fmt.Sprintf("%s.processors[%d]", path, i)); err != nil {
				return err
			}
		}
		return nil
	case "TemplateProcessing":
		seenA := false
		for i, raw := range n.Single {
			var it struct {
				SpecialToken *struct {
					ID string `json:"id"`
				} `json:"SpecialToken"`
				Sequence *struct {
					ID string `json:"id"`
				} `json:"Sequence"`
			}
			if err := json.Unmarshal(raw, &it); err != nil {
				return fmt.Errorf("tokenizer: %s: [%s.single[%d]]: %w", file, path, i, err)
			}
			switch {
			case it.Sequence != nil:
				seenA = true
			case it.SpecialToken != nil:
				st, ok := n.SpecialTokens[it.SpecialToken.ID]
				if !ok {
					return fmt.Errorf("tokenizer: %s: [%s.single[%d]]: special token %q missing from [special_tokens]", file, path, i, it.SpecialToken.ID)
				}
				if seenA {
					pp.after = append(pp.after, st.IDs...)
				} else {
					pp.before = append(pp.before, st.IDs...)
				}
			}
		}
		return nil
	case "BertProcessing", "RobertaProcessing":
		// single sequence: [CLS] $A [SEP] (Roberta: <s> $A </s>)
		var cls, sep [2]json.RawMessage
		if json.Unmarshal(n.Cls, &cls) != nil || json.Unmarshal(n.Sep, &sep) != nil {
			return fmt.Errorf("tokenizer: %s: [%s] %s: want [cls] and [sep] as [token, id]", file, path, n.Type)
		}
		var ci, si int32
		if json.Unmarshal(cls[1], &ci) != nil || json.Unmarshal(sep[1], &si) != nil {
			return fmt.Errorf("tokenizer: %s: [%s] %s: bad [cls]/[sep] id", file, path, n.Type)
		}
		pp.before = append(pp.before, ci)
		pp.after = append([]int32{si}, pp.after...)
		return nil
	}
	return &UnsupportedError{File: file, Component: path, Type: n.Type}
}
