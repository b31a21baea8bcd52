use super::peers::encode_e4m3;
use super::*;

#[test]
fn sheets_and_custom_shapes_parse() {
    assert_eq!(parse_shapes("27b").unwrap().len(), 6);
    assert_eq!(parse_shapes("1p7b").unwrap().len(), 5);
    assert_eq!(parse_shapes("160x129").unwrap()[0].out_f, 129);
    assert!(parse_shapes("100x5")
        .unwrap_err()
        .contains("multiple of 32"));
    assert!(parse_shapes("65536x65536").is_err());
    assert!(parse_shapes("5120").is_err());
}

#[test]
fn e4m3_encoding_is_the_nearest_code() {
    for code in 0u8..0x7F {
        let v = f16::from_bits(E4M3_F16[code as usize].0).to_f32();
        assert_eq!(encode_e4m3(v), code, "{v}");
        assert_eq!(encode_e4m3(-v), code | 0x80, "{v}");
    }
    assert_eq!(encode_e4m3(1e9), 0x7E);
    assert_eq!(encode_e4m3(0.0), 0);
}
