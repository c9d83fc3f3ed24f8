# embed.cmake - writes file IN as a C array NAME (and NAME_len) to OUT:
#   cmake -DIN=index.html -DOUT=web_index.c -DNAME=cutd_web_index -P embed.cmake
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" n)
math(EXPR len "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)"
	"\\1\n" bytes "${bytes}")
file(WRITE ${OUT}
"/* Generated from ${IN} by embed.cmake; do not edit. */\n"
"#include <stddef.h>\n"
"const unsigned char ${NAME}[] = {\n${bytes}0x00};\n"
"const size_t ${NAME}_len = ${len};\n")
