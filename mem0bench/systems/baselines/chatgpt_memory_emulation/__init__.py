"""`chatgpt_memory_emulation`: an emulation of ChatGPT's saved memories (not OpenAI's product)."""
