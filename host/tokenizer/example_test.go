package tokenizer_test

import (
	"fmt"

	"github.com/genload/genload/host/tokenizer"
)

// The embedded Qwen3 tokenizer: ids, decode, and a one-message chat prompt whose ids are what
// a server computes for the request (BOS-free for Qwen3; templates that write BOS get it once).
func Example() {
	tk, err := tokenizer.Default()
	if err != nil {
		panic(err)
	}
	ids := tk.Encode("Hello world<|im_end|>")
	fmt.Println(ids, tk.Decode(ids, false), tk.Decode(ids, true))
	s, _ := tk.ApplyChatTemplate([]tokenizer.Message{{Role: "user", Content: "Hi"}}, true)
	fmt.Printf("%q\n", s)
	chat, _ := tk.EncodeChat([]tokenizer.Message{{Role: "user", Content: "Hi"}}, true)
	fmt.Println(len(chat), "tokens")
	fmt.Println(tk.ModelMaxLen())
	// Output:
	// [9707 1879 151645] Hello world<|im_end|> Hello world
	// "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
	// 9 tokens
	// 131072 tokenizer_config.json [model_max_length]
}
