from roofline.cli import console

console()
