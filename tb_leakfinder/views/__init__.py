"""What users see: the TensorBoard plugin's routes, the CLI, text, Markdown, CSV and the standalone HTML, all
rendering the one report JSON (tb_leakfinder/wire/). May import everything; nothing imports views."""
